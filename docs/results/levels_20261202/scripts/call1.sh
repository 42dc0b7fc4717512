#!/usr/bin/env bash
# Session 34, call 1 (one H200): two Winograd levels in the residues (build-s34: this change).
# GPU unit tests of the emulation; the passes under the profile at f64 32768 with one level
# (DISTMM_EMULATION_LEVEL=1: what main's auto runs at 32768) and with auto (two levels there);
# then one against two levels, f64 and f32 at 32768, three rounds, the order reversed in the second.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-s34
start=$SECONDS
timeout 170 $B/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*' > $OUT/unit.txt 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" $OUT/unit.txt | head -24
echo "unit: $((SECONDS-start)) s"
for lv in 1 auto; do
  echo "profile level $lv"
  DISTMM_EMULATION_LEVEL=$lv DISTMM_EMULATION_PROFILE=1 timeout 60 $B/distmm gpu-bench --dtype f64 --sizes 32768 \
    --engines gpu-ozaki --repeat 1 --no-error > $OUT/profile_$lv.txt 2>&1
  grep -vE "candidate [0-9]+.*ms$" $OUT/profile_$lv.txt | tail -40 | cut -c1-200
done
echo "profiles: $((SECONDS-start)) s"
run() {  # level dtype
  DISTMM_EMULATION_LEVEL=$1 timeout 70 $B/distmm gpu-bench --dtype $2 --sizes 32768 --engines gpu-ozaki --repeat 5 \
    --no-error --json $OUT/bench_$1.jsonl 2>&1 | grep -E "^\| [0-9]+ .*ozaki"
}
for list in "1 auto" "auto 1" "1 auto"; do
  for v in $list; do
    for dt in f64 f32; do echo "level $v $dt $(date +%T)"; run $v $dt; done
  done
  echo "round: $((SECONDS-start)) s"
done
echo "total: $((SECONDS-start)) s"
