#!/usr/bin/env bash
# Session 32, call 8 (one H200): one fold kernel for real and complex Winograd levels (a refactor);
# the emulation's GPU unit tests (the level's same-bits test covers real and complex), and one
# profile at c64 and f64 16384 (the fold pass).
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
start=$SECONDS
timeout 150 build-s32n/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*' > $OUT/unit.txt 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" $OUT/unit.txt | head -20
echo "unit: $((SECONDS-start)) s"
DISTMM_EMULATION_PROFILE=1 timeout 40 build-s32n/distmm gpu-bench --dtype f64 --sizes 16384 --engines gpu-ozaki --repeat 2 --no-error 2>&1 | grep -E "^emulation|^\| [0-9]+ .*ozaki" | tail -2
echo "total: $((SECONDS-start)) s"
