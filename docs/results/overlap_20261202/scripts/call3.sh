#!/usr/bin/env bash
# Session 33, call 3 (one H200): the final binary (build-s33n: the INT8 products and the Winograd
# sums on a stream of the greatest priority, cuBLASLt's SM count target leaving
# DISTMM_EMULATION_SIDE_SMS SMs to the folds beside them). Its GPU unit tests; then base
# (build-s33 with its experiment switches off: as main 74f1861) against new (side 8, the
# default) and new with side 0 (priority only), f64 and f32 at 16384 and 32768, three rounds,
# the order rotated.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
start=$SECONDS
timeout 240 build-s33n/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*:GpuEngines*' > $OUT/unit.txt 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" $OUT/unit.txt | head -20
echo "unit: $((SECONDS-start)) s"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -l 1 > $OUT/smi.csv 2>&1 &
smi=$!
run() {  # variant dtype
  local bin=build-s33n/distmm side=${1#side}
  [ $1 = base ] && { bin=build-s33/distmm; side=0; }
  DISTMM_EMULATION_SIDE_SMS=$side timeout 120 $bin gpu-bench --dtype $2 --sizes 16384 32768 --engines gpu-ozaki \
    --repeat 5 --no-error --json $OUT/bench_$1.jsonl 2>&1 | grep -E "^\| [0-9]+ .*ozaki"
}
for list in "base side8 side0" "side8 side0 base" "side0 base side8"; do
  for v in $list; do
    for dt in f64 f32; do echo "$v $dt $(date +%T)"; run $v $dt; done
  done
  echo "round: $((SECONDS-start)) s"
done
kill $smi
echo "total: $((SECONDS-start)) s"
