#!/usr/bin/env bash
# Session 31, call 1 (one H200): the Winograd level in the residues (DISTMM_EMULATION_LEVEL).
# 1. its GPU unit tests and the emulation's others; 2. cuBLASLt's INT8 rate whole and in the 7
# quarter products of one level (PyTorch's _int_mm); 3. gpu-ozaki at native accuracy, the level
# off (0) and on (1) in the same binary, alternating, f32 and f64 at 16384 and 32768; 4. the
# passes under DISTMM_EMULATION_PROFILE at 16384.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
B=build-s31
nvidia-smi -L
start=$SECONDS
timeout 240 $B/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*' 2>&1 |
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual|exact Winograd" | head -40
echo "unit: $((SECONDS-start)) s"
timeout 120 python3 $B/int8_probe.py 16384 32768 2>&1 | tail -4
echo "probe: $((SECONDS-start)) s"
for r in 1 2; do
  for dt in f32 f64; do
    for lv in 0 1; do
      [ $r = 2 ] && lv=$((1 - lv))
      echo "r$r $dt level $lv"
      DISTMM_EMULATION_LEVEL=$lv timeout 100 $B/distmm gpu-bench --dtype $dt --sizes 16384 32768 --engines gpu-ozaki \
        --repeat 5 --no-error --json $OUT/bench.jsonl 2>&1 | grep -E "^\| [0-9]"
    done
  done
  echo "round $r: $((SECONDS-start)) s"
done
for dt in f32 f64; do
  for lv in 0 1; do
    echo "profile $dt level $lv"
    DISTMM_EMULATION_LEVEL=$lv DISTMM_EMULATION_PROFILE=1 timeout 60 $B/distmm gpu-bench --dtype $dt --sizes 16384 \
      --engines gpu-ozaki --repeat 1 --no-error 2>&1 | grep -E "^emulation|^\| [0-9]" | tail -2
  done
done
echo "total: $((SECONDS-start)) s"
