#!/usr/bin/env bash
# Session 37, call 2 (one H200): main's binary. Nsight Compute on the slices+sums and CRT kernels
# at f64 and f32 16384: the pipes, the stalls, the SASS lines they stall on.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-run
start=$SECONDS
for dt in f64 f32; do
  timeout 200 ncu --target-processes all -k 'regex:crt_combine|to_slices_and_sums' -c 3 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section SchedulerStats \
    --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section SourceCounters \
    $B/distmm gpu-bench --dtype $dt --sizes 16384 --engines gpu-ozaki --repeat 1 --no-error > $OUT/ncu_$dt.txt 2>&1
  echo "$dt rc $? $((SECONDS-start)) s"
done
