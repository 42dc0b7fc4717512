#!/usr/bin/env bash
# Session 33, call 2 (one H200): the GPU unit tests of the new binary (build-s33n: the products
# on a stream of the greatest priority with an SM count target, the next modulus' Winograd sums
# made beside them, taken out after this call); then base (build-s33 with the experiment off: as main) against new with
# DISTMM_EMULATION_SIDE_SMS = 8 (default), 4 and 0, f64 and f32 at 16384 and 32768, two rounds,
# the order reversed in the second.
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
list="base side8 side4 side0"
for r in 1 2; do
  [ $r = 2 ] && list="side0 side4 side8 base"
  for v in $list; do
    for dt in f64 f32; do echo "r$r $v $dt $(date +%T)"; run $v $dt; done
  done
  echo "round $r: $((SECONDS-start)) s"
done
kill $smi
echo "err new"; timeout 60 build-s33n/distmm gpu-bench --dtype f64 --sizes 8192 --engines gpu-ozaki --repeat 1 2>&1 | grep -E "^\| [0-9]+ .*ozaki"
echo "total: $((SECONDS-start)) s"
