#!/usr/bin/env bash
# Session 32, call 1 (one H200): main 6d70be4's GPU unit tests (8be427f's GPU side was not run on a
# GPU), whether ncu reads counters here, and if so the CRT, fold and bound kernels at f64 16384.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
B=build-s32
nvidia-smi -L; uname -r
start=$SECONDS
timeout 240 $B/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*:GpuEngines*' 2>&1 |
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" | head -40
echo "unit: $((SECONDS-start)) s"
which ncu
timeout 200 ncu --clock-control none --kernel-name regex:'crt_combine|fold_winograd|winograd_sums|product_ratios|outer_stats|to_slices' \
  --launch-count 8 --section SpeedOfLight --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
  $B/distmm gpu-bench --dtype f64 --sizes 16384 --engines gpu-ozaki --repeat 1 --no-error > $OUT/ncu_f64.txt 2>&1
echo "ncu rc $? : $((SECONDS-start)) s"; head -c 3000 $OUT/ncu_f64.txt | grep -v pmix | head -40
