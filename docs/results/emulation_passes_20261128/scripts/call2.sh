#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")/.."
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
N=build-s29
$N/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation.ProductBound*' 2>&1 | grep -E "Failure|bound|OK|FAILED|PASSED|Expected|Which" | head -30
for n in 1024 4096 16384; do
  DISTMM_EMULATION_PROFILE=1 $N/distmm gpu-bench --dtype f32 --sizes $n --engines gpu-ozaki --repeat 1 --no-error 2>&1 | grep -E "^emulation|X " | tail -2
done
