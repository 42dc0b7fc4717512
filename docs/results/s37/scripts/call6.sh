#!/usr/bin/env bash
# Session 37, call 6 (one H200): the final binary (call 4's with the CRT as on main again: call 5
# measured the loads-first CRT 11% more instructions and 2.7% slower at f64 16384). The
# emulation's GPU unit tests, then two rounds of main (4ec0c82, distmm_old) against it, the order
# reversed in the second.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-run
start=$SECONDS
timeout 150 $B/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*' > $OUT/unit.txt 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" $OUT/unit.txt | head -24
echo "unit: $((SECONDS-start)) s"
run() {  # binary dtype
  timeout 60 $B/$1 gpu-bench --dtype $2 --sizes 16384 32768 --engines gpu-ozaki --repeat 5 \
    --no-error --json $OUT/bench_$1.jsonl 2>&1 | grep -E "^\| [0-9]+ .*(ozaki|cublas)"
}
for list in "distmm_old distmm" "distmm distmm_old"; do
  for v in $list; do
    for dt in f64 f32; do echo "$v $dt $(date +%T)"; run $v $dt; done
  done
  echo "round: $((SECONDS-start)) s"
  [ $((SECONDS-start)) -gt 160 ] && break
done
echo "total: $((SECONDS-start)) s"
