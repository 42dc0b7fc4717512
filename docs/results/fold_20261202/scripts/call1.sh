#!/usr/bin/env bash
# Session 35, call 1 (one H200): the folds with fewer remainders (build-s35/distmm: this change;
# build-s35/distmm_old: main before it, e9d7767, the same build otherwise). GPU unit tests of the
# emulation (the same bits); the passes under the profile at f64 32768 and 16384; then old
# against new, f64 and f32 at 16384 and 32768, three rounds, the order reversed in the second;
# then DISTMM_EMULATION_SIDE_SMS 0 and 16 beside auto (8 at 32768) with the new binary.
# (As run: the bench loop's --sizes 16384,32768 is not how gpu-bench takes sizes, so those runs
# printed nothing; call2.sh ran that loop with --sizes 16384 32768.)
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-s35
start=$SECONDS
timeout 170 $B/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*' > $OUT/unit.txt 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" $OUT/unit.txt | head -24
echo "unit: $((SECONDS-start)) s"
for n in 32768 16384; do
  DISTMM_EMULATION_PROFILE=1 timeout 60 $B/distmm gpu-bench --dtype f64 --sizes $n --engines gpu-ozaki --repeat 1 \
    --no-error > $OUT/profile_$n.txt 2>&1
  grep -E "^emulation" $OUT/profile_$n.txt | tail -1 | cut -c1-300
done
echo "profiles: $((SECONDS-start)) s"
run() {  # binary dtype
  timeout 80 $B/$1 gpu-bench --dtype $2 --sizes 16384,32768 --engines gpu-ozaki --repeat 5 \
    --no-error --json $OUT/bench_$1.jsonl 2>&1 | grep -E "^\| [0-9]+ .*ozaki"
}
for list in "distmm_old distmm" "distmm distmm_old" "distmm_old distmm"; do
  for v in $list; do
    for dt in f64 f32; do echo "$v $dt $(date +%T)"; run $v $dt; done
  done
  echo "round: $((SECONDS-start)) s"
done
for sms in 0 16; do
  echo "side SMs $sms"
  DISTMM_EMULATION_SIDE_SMS=$sms timeout 60 $B/distmm gpu-bench --dtype f64 --sizes 32768 --engines gpu-ozaki \
    --repeat 5 --no-error --json $OUT/bench_side$sms.jsonl 2>&1 | grep -E "^\| [0-9]+ .*ozaki"
done
echo "total: $((SECONDS-start)) s"
