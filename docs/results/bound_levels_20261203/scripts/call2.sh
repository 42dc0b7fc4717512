#!/usr/bin/env bash
# Session 36, call 2 (one H200): f64 statistics in one pass and the first level's sums made
# beside the slices (build-run/distmm) against main
# (a41a851, build-run/distmm_old). The emulation's GPU unit tests; the passes under the profile
# (the bound's now in three parts); then old against new at f64 and f32, 16384 and 32768, three
# rounds, the order reversed in the second.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-run
start=$SECONDS
timeout 200 $B/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*:GpuEngines*' > $OUT/unit.txt 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" $OUT/unit.txt | head -24
echo "unit: $((SECONDS-start)) s"
for c in "f64 16384" "f64 32768" "f32 16384"; do
  set -- $c
  DISTMM_EMULATION_PROFILE=1 timeout 60 $B/distmm gpu-bench --dtype $1 --sizes $2 --engines gpu-ozaki --repeat 1 \
    --no-error > $OUT/profile_$1_$2.txt 2>&1
  grep -E "^emulation" $OUT/profile_$1_$2.txt | tail -1 | cut -c1-420
done
echo "profiles: $((SECONDS-start)) s"
run() {  # binary dtype
  timeout 100 $B/$1 gpu-bench --dtype $2 --sizes 16384 32768 --engines gpu-ozaki --repeat 5 \
    --no-error --json $OUT/bench_$1.jsonl 2>&1 | grep -E "^\| [0-9]+ .*(ozaki|cublas)"
}
for list in "distmm_old distmm" "distmm distmm_old" "distmm_old distmm"; do
  for v in $list; do
    for dt in f64 f32; do echo "$v $dt $(date +%T)"; run $v $dt; done
  done
  echo "round: $((SECONDS-start)) s"
done
echo "total: $((SECONDS-start)) s"
# item 3 again: f64 49152 under an 80 GB GPU's room (a 20 GiB workspace cap), verified
DISTMM_EMULATION_WORKSPACE=20G timeout 150 $B/distmm run --engine gpu-ozaki --dtype f64 --size 49152 \
  --verify freivalds > $OUT/run_49152_20G.txt 2>&1
grep -E "PASS|FAIL|rror|gpu-ozaki" $OUT/run_49152_20G.txt | head -5
echo "end: $((SECONDS-start)) s"
