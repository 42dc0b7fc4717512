#!/usr/bin/env bash
# Session 29, one H100: the emulation with four entries per thread in the folds and the CRT (and
# 32-bit folds) against main before this session (build-old/distmm_base), GEMMul8 in the new
# process; f32 16384 and 32768, f64 16384, three rounds alternating.
set -uo pipefail
cd "$(dirname "$0")/.."
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
N=build-s29; O=build-old/distmm_base
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
start=$SECONDS
$N/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:OzakiAccuracy*:OzakiArith*' > $OUT/unit.log 2>&1
echo "unit rc $?"; grep -E "FAILED|PASSED|tests ran" $OUT/unit.log | head -20
echo "unit: $((SECONDS-start)) s"
for d in f32 f64; do
  echo "profile $d"
  DISTMM_EMULATION_PROFILE=1 $N/distmm gpu-bench --dtype $d --sizes 16384 --engines gpu-ozaki --repeat 2 --no-error 2>&1 | grep -E "^emulation|X " | tail -2
done
for r in 1 2 3; do
  $O gpu-bench --dtype f32 --sizes 16384 32768 --engines gpu-ozaki --repeat 5 --json $OUT/base.jsonl 2>&1 | grep -E "^\| [0-9]" | sed 's/^/base /'
  $N/gemmul8_bench --dtype f32 --sizes 16384 32768 --engines gpu-ozaki --gemmul8 7:fast --repeat 5 --json $OUT/new.jsonl 2>&1 | grep -E "^\| [0-9]" | sed 's/^/new /'
  $O gpu-bench --dtype f64 --sizes 16384 --engines gpu-ozaki --repeat 5 --json $OUT/base.jsonl 2>&1 | grep -E "^\| [0-9]" | sed 's/^/base /'
  $N/gemmul8_bench --dtype f64 --sizes 16384 --engines gpu-ozaki --gemmul8 14:accurate --repeat 5 --json $OUT/new.jsonl 2>&1 | grep -E "^\| [0-9]" | sed 's/^/new /'
  echo "round $r: $((SECONDS-start)) s"
done
echo "total: $((SECONDS-start)) s"
