#!/usr/bin/env bash
# Session 32, call 4 (one H200): the CRT's 16-byte stores of C; GPU unit tests (the layout test
# new); ncu on the new crt_combine (f64 split, f32 one word) at 16384; the passes of base and new.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
start=$SECONDS
timeout 200 build-s32n/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*' 2>&1 |
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" | head -30
echo "unit: $((SECONDS-start)) s"
for dt in f64 f32; do
  timeout 100 ncu --clock-control none --kernel-name regex:'crt_combine' --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section Occupancy --section MemoryWorkloadAnalysis --section SourceCounters \
    build-s32n/distmm gpu-bench --dtype $dt --sizes 16384 --engines gpu-ozaki --repeat 1 --no-error > $OUT/ncu_crt_$dt.txt 2>&1
  grep -E "Duration|Executed Instructions  |DRAM Throughput|Registers Per|Achieved Occ|excessive" $OUT/ncu_crt_$dt.txt
done
echo "ncu: $((SECONDS-start)) s"
for r in 1 2; do
for b in base new; do
  bin=build-s32n/distmm; [ $b = base ] && bin=build-s32/distmm
  for dt in f64 f32; do
    echo "profile r$r $dt $b"
    DISTMM_EMULATION_PROFILE=1 timeout 100 $bin gpu-bench --dtype $dt --sizes 16384 32768 --engines gpu-ozaki --repeat 2 --no-error 2>&1 | grep -E "^emulation|^\| [0-9]+ .*ozaki" | sed 's/exponents+alloc [0-9.]* ms, //'
  done
done
done
echo "total: $((SECONDS-start)) s"
