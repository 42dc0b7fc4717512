#!/usr/bin/env bash
# Session 37, call 4 (one H200): the new binary (build-run/distmm: the CRT's bytes loaded before
# any is summed; the slice kernels' residues in [0, m), four to symmetric bytes at once;
# the fused slices+sums kernel reading its tile again per modulus, 40-54 registers instead of 80;
# outer_stats' exponents from the bits and its scaling by a power of two's product) against
# main (4ec0c82, build-run/distmm_old). The emulation's GPU unit tests (the same bits as the
# host twin); the passes under the profile; then old against new at f64 and f32, 16384 and
# 32768, three rounds, the order reversed in the second.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-run
start=$SECONDS
timeout 200 $B/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*:GpuEngines*' > $OUT/unit.txt 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" $OUT/unit.txt | head -24
echo "unit: $((SECONDS-start)) s"
for c in "f64 16384" "f32 16384"; do
  set -- $c
  DISTMM_EMULATION_PROFILE=1 timeout 60 $B/distmm gpu-bench --dtype $1 --sizes $2 --engines gpu-ozaki --repeat 1 \
    --no-error > $OUT/profile_$1_$2.txt 2>&1
  grep -E "^emulation" $OUT/profile_$1_$2.txt | tail -1 | cut -c1-520
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
  [ $((SECONDS-start)) -gt 470 ] && break
done
echo "total: $((SECONDS-start)) s"
