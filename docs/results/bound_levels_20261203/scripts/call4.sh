#!/usr/bin/env bash
# Session 36, call 4 (one H200): the review's binary (the fused slices' launch shares the width
# dispatch of the other slice kernels; the same kernels and arguments): the emulation's GPU unit
# tests, then one f64 gpu-bench run against main beside it.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-run
start=$SECONDS
timeout 200 $B/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*' > $OUT/unit.txt 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" $OUT/unit.txt | head -24
echo "unit: $((SECONDS-start)) s"
for v in distmm_old distmm; do
  echo "$v $(date +%T)"
  timeout 60 $B/$v gpu-bench --dtype f64 --sizes 16384 --engines gpu-ozaki --repeat 5 --no-error \
    --json $OUT/bench_$v.jsonl 2>&1 | grep -E "^\| [0-9]+ .*(ozaki|cublas)"
done
echo "total: $((SECONDS-start)) s"
