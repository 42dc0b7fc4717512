#!/usr/bin/env bash
# Session 37, call 5 (one H200): the new binary. Item 3 again (f64 49152 under a 20 GB workspace
# cap: row blocks, the sums pass, Freivalds on the GPU), then Nsight Compute on the new CRT and
# slices+sums kernels at f64 16384 (why they did not move there: call 4's profile).
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-run
start=$SECONDS
DISTMM_EMULATION_WORKSPACE=20G timeout 150 $B/distmm run --engine gpu-ozaki --dtype f64 --size 49152 --verify freivalds \
  > $OUT/item3.txt 2>&1
echo "item3 rc $? $((SECONDS-start)) s"; grep -iE "freivalds|moduli|workspace|error" $OUT/item3.txt | head -6 | cut -c1-300
timeout 150 ncu --target-processes all -k 'regex:crt_combine|to_slices_and_sums' -c 3 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section SchedulerStats \
  --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section SourceCounters \
  $B/distmm gpu-bench --dtype f64 --sizes 16384 --engines gpu-ozaki --repeat 1 --no-error > $OUT/ncu_f64.txt 2>&1
echo "ncu rc $? $((SECONDS-start)) s"
grep -E "^  void|Duration|highest-utilized|Issue Slots Busy|Executed Instructions  |Registers Per|Achieved Occ|No Eligible|DRAM Throughput|L2 Cache Throughput" $OUT/ncu_f64.txt | cut -c1-150
