#!/usr/bin/env bash
# Session 32, call 2 (one H200): ncu on the CRT and fold kernels at f64 16384 (where the profile's
# "crt" pass takes 10.6 ms, far above its bytes), and the emulation profile of the same run.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
B=build-s32
start=$SECONDS
DISTMM_EMULATION_PROFILE=1 timeout 100 $B/distmm gpu-bench --dtype f64 --sizes 16384 --engines gpu-ozaki --repeat 3 --no-error 2>&1 | grep -E "^emulation|^\| 16384"
timeout 200 ncu --clock-control none --kernel-name regex:'crt_combine|fold_winograd' --launch-count 2 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis \
  $B/distmm gpu-bench --dtype f64 --sizes 16384 --engines gpu-ozaki --repeat 1 --no-error > $OUT/ncu_crt.txt 2>&1
echo "ncu rc $? : $((SECONDS-start)) s"
timeout 120 ncu --clock-control none --kernel-name regex:'crt_combine' --launch-count 1 --set full --import-source no \
  $B/distmm gpu-bench --dtype f64 --sizes 16384 --engines gpu-ozaki --repeat 1 --no-error > $OUT/ncu_crt_full.txt 2>&1
echo "ncu rc $? : $((SECONDS-start)) s"
