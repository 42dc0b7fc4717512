#!/usr/bin/env bash
# Session 29, one H100: the final binary (the CRT's forms sharing one walk over the bytes, the
# bound's whole product after short pairs): the GPU engines' unit tests, one round of f32 and
# f64 against main before the session (build-old/distmm_base).
set -uo pipefail
cd "$(dirname "$0")/.."
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
N=build-s29; O=build-old/distmm_base
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
start=$SECONDS
$N/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*:GpuEngines*:DeviceRandom*:Tuned*' > $OUT/unit.log 2>&1
echo "unit rc $?"; grep -E "FAILED|PASSED|tests ran" $OUT/unit.log | head -20
echo "unit: $((SECONDS-start)) s"
for d in f32 f64; do
  $O gpu-bench --dtype $d --sizes 16384 32768 --engines gpu-ozaki --repeat 5 --json $OUT/base.jsonl 2>&1 | grep -E "^\| [0-9]" | sed 's/^/base /'
  $N/distmm gpu-bench --dtype $d --sizes 16384 32768 --engines gpu-ozaki --repeat 5 --json $OUT/new.jsonl 2>&1 | grep -E "^\| [0-9]" | sed 's/^/new /'
  echo "$d: $((SECONDS-start)) s"
done
