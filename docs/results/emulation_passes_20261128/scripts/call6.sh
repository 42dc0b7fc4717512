#!/usr/bin/env bash
# Session 29, one H100: the split CRT's join with the reciprocal of M2 (no divisions), f64 at
# 16384 and 32768 against main before the session (build-old/distmm_base), two rounds; the GPU
# engines' unit tests on the final binary.
set -uo pipefail
cd "$(dirname "$0")/.."
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
N=build-s29; O=build-old/distmm_base
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
start=$SECONDS
$N/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:OzakiAccuracy*:OzakiArith*:GpuEngine*:Gpu*' > $OUT/unit.log 2>&1
echo "unit rc $?"; grep -E "FAILED|PASSED|tests ran" $OUT/unit.log | head -20
echo "unit: $((SECONDS-start)) s"
for b in $O $N/distmm; do
  echo "profile f64 $b"
  DISTMM_EMULATION_PROFILE=1 $b gpu-bench --dtype f64 --sizes 16384 --engines gpu-ozaki --repeat 2 --no-error 2>&1 | grep -E "^emulation" | tail -1
done
for r in 1 2; do
  $O gpu-bench --dtype f64 --sizes 16384 32768 --engines gpu-ozaki --repeat 5 --json $OUT/base.jsonl 2>&1 | grep -E "^\| [0-9]" | sed 's/^/base /'
  $N/distmm gpu-bench --dtype f64 --sizes 16384 32768 --engines gpu-ozaki --repeat 5 --json $OUT/new.jsonl 2>&1 | grep -E "^\| [0-9]" | sed 's/^/new /'
  echo "round $r: $((SECONDS-start)) s"
done
echo "total: $((SECONDS-start)) s"
