#!/usr/bin/env bash
# Session 36, call 1 (one H200): main (a41a851) as built; is two Winograd levels in the residues
# at 16384 (DISTMM_EMULATION_LEVEL=2, 4096^3 products) faster than auto's one there? Profiles of
# both, then auto against 2 at f64 and f32, three rounds, the order reversed in the second.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-run
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
for lv in auto 2; do
  DISTMM_EMULATION_LEVEL=$lv DISTMM_EMULATION_PROFILE=1 timeout 60 $B/distmm gpu-bench --dtype f64 --sizes 16384 \
    --engines gpu-ozaki --repeat 1 --no-error > $OUT/profile_$lv.txt 2>&1
  echo "level $lv: $(grep -E '^emulation' $OUT/profile_$lv.txt | tail -1 | cut -c1-330)"
done
echo "profiles: $((SECONDS-start)) s"
run() {  # level dtype
  DISTMM_EMULATION_LEVEL=$1 timeout 80 $B/distmm gpu-bench --dtype $2 --sizes 16384 --engines gpu-ozaki --repeat 5 \
    --no-error --json $OUT/bench_$1.jsonl 2>&1 | grep -E "^\| [0-9]+ .*ozaki|rror"
}
for list in "auto 2" "2 auto" "auto 2"; do
  for v in $list; do
    for dt in f64 f32; do echo "level $v $dt $(date +%T)"; run $v $dt; done
  done
  echo "round: $((SECONDS-start)) s"
done
echo "total: $((SECONDS-start)) s"
