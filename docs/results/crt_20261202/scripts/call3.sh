#!/usr/bin/env bash
# Session 32, call 3 (one H200): the CRT without a reduction per term (one-word: one reduction;
# split: Garner's step by one Montgomery multiplication on the unreduced sums). Its GPU unit tests;
# base (build-s32: main 6d70be4) against new, f64 and f32 at 16384 and 32768, two rounds with the
# order swapped; the passes of both at f64 16384 and 32768.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
start=$SECONDS
timeout 200 build-s32n/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*' 2>&1 |
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" | head -30
echo "unit: $((SECONDS-start)) s"
for r in 1 2; do
  for b in base new; do
    [ $r = 2 ] && { [ $b = base ] && b=new || b=base; }
    bin=build-s32n/distmm; [ $b = base ] && bin=build-s32/distmm
    for dt in f64 f32; do
      echo "r$r $dt $b"
      timeout 100 $bin gpu-bench --dtype $dt --sizes 16384 32768 --engines gpu-ozaki --repeat 5 --no-error \
        --json $OUT/bench.jsonl 2>&1 | grep -E "^\| [0-9]+ "
    done
  done
  echo "round $r: $((SECONDS-start)) s"
done
for b in base new; do
  bin=build-s32n/distmm; [ $b = base ] && bin=build-s32/distmm
  for dt in f64 f32; do
    echo "profile $dt $b"
    DISTMM_EMULATION_PROFILE=1 timeout 100 $bin gpu-bench --dtype $dt --sizes 16384 32768 --engines gpu-ozaki --repeat 2 --no-error 2>&1 | grep -E "^emulation" | tail -2
  done
done
echo "total: $((SECONDS-start)) s"
