#!/usr/bin/env bash
# Session 29, one H100: the emulation's f32 passes (paired |A||B| bound, 64-bit CRT, 32-bit
# residues, one-pass statistics) against main (build-old/distmm_base), GEMMul8 in the new process.
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
for b in $O $N/distmm; do
  echo "profile $b"
  DISTMM_EMULATION_PROFILE=1 $b gpu-bench --dtype f32 --sizes 16384 --engines gpu-ozaki --repeat 2 --no-error 2>&1 | grep -E "^emulation" | tail -1
done
for r in 1 2 3; do
  $O gpu-bench --dtype f32 --sizes 16384 32768 --engines gpu-ozaki --repeat 5 --json $OUT/base.jsonl 2>&1 | grep -E "^\| [0-9]" | sed 's/^/base /'
  $N/gemmul8_bench --dtype f32 --sizes 16384 32768 --engines gpu-ozaki --gemmul8 7:fast 8:fast --repeat 5 --json $OUT/new.jsonl 2>&1 | grep -E "^\| [0-9]" | sed 's/^/new /'
  echo "round $r: $((SECONDS-start)) s"
done
$O gpu-bench --dtype f64 --sizes 16384 --engines gpu-ozaki --repeat 5 --json $OUT/base.jsonl 2>&1 | grep -E "^\| [0-9]" | sed 's/^/base /'
$N/gemmul8_bench --dtype f64 --sizes 16384 --engines gpu-ozaki --gemmul8 14:accurate 16:accurate --repeat 5 --json $OUT/new.jsonl 2>&1 | grep -E "^\| [0-9]" | sed 's/^/new /'
echo "total: $((SECONDS-start)) s"
