#!/usr/bin/env bash
# Session 31, call 2 (one H200): the level's sums one modulus at a time (less memory), its unit
# tests; gpu-ozaki with the level off (0) and on (1) in the same binary, alternating, two rounds,
# f32 and f64 at 8192, 16384 and 32768; the error of both at f32 16384 (the same bits, so the same
# error); the passes under DISTMM_EMULATION_PROFILE at 16384 and 32768.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
B=build-s31
nvidia-smi -L
start=$SECONDS
timeout 240 $B/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*' 2>&1 |
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual|exact Winograd" | head -40
echo "unit: $((SECONDS-start)) s"
for r in 1 2; do
  for dt in f32 f64; do
    for lv in 0 1; do
      [ $r = 2 ] && lv=$((1 - lv))
      echo "r$r $dt level $lv"
      DISTMM_EMULATION_LEVEL=$lv timeout 100 $B/distmm gpu-bench --dtype $dt --sizes 8192 16384 32768 --engines gpu-ozaki \
        --repeat 5 --no-error --json $OUT/bench.jsonl 2>&1 | grep -E "^\| [0-9]+ .*gpu-ozaki"
    done
  done
  echo "round $r: $((SECONDS-start)) s"
done
for lv in 0 1; do
  echo "error f32 level $lv"
  DISTMM_EMULATION_LEVEL=$lv timeout 60 $B/distmm gpu-bench --dtype f32 --sizes 16384 --engines gpu-ozaki --repeat 1 \
    2>&1 | grep -E "^\| [0-9]"
done
for n in 16384 32768; do
  for dt in f32 f64; do
    for lv in 0 1; do
      echo "profile $dt $n level $lv"
      DISTMM_EMULATION_LEVEL=$lv DISTMM_EMULATION_PROFILE=1 timeout 60 $B/distmm gpu-bench --dtype $dt --sizes $n \
        --engines gpu-ozaki --repeat 1 --no-error 2>&1 | grep -E "^emulation" | tail -1
    done
  done
done
echo "total: $((SECONDS-start)) s"
