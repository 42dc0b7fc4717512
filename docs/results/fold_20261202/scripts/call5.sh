#!/usr/bin/env bash
# Session 35, call 5 (one H200): fit() looks past the first row block height that fits for one
# whose blocks take more Winograd levels (build-s35/distmm; build-s35/distmm_ad9e117: main
# before it). The GPU unit tests of the emulation (blocks and panels under caps among them), then
# f64 49152 uncapped, before against after, two rounds, the order reversed in the second, and
# the new binary's run with Freivalds' check.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-s35
start=$SECONDS
timeout 150 $B/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*' > $OUT/unit.txt 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" $OUT/unit.txt | head -24
echo "unit: $((SECONDS-start)) s"
run() {  # binary
  timeout 100 $B/$1 gpu-bench --dtype f64 --sizes 49152 --engines gpu-ozaki --repeat 3 --no-error \
    --json $OUT/bench_$1.jsonl 2>&1 | grep -E "^\| [0-9]+ .*ozaki|rror" | cut -c1-300
}
for list in "distmm_ad9e117 distmm" "distmm distmm_ad9e117"; do
  for v in $list; do echo "$v $(date +%T)"; run $v; done
done
timeout 100 $B/distmm run --engine gpu-ozaki --dtype f64 --size 49152 --verify freivalds > $OUT/run.txt 2>&1
echo "run rc $?"; grep -E "engine|time|verification" $OUT/run.txt | cut -c1-300
echo "total: $((SECONDS-start)) s"
