#!/usr/bin/env bash
# Session 35, call 2 (one H200, right after call 1, whose bench loop passed --sizes wrongly):
# old against new, f64 and f32 at 16384 and 32768, three rounds, the order reversed in the second.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-s35
start=$SECONDS
run() {  # binary dtype
  timeout 80 $B/$1 gpu-bench --dtype $2 --sizes 16384 32768 --engines gpu-ozaki --repeat 5 \
    --no-error --json $OUT/bench_$1.jsonl 2>&1 | grep -E "^\| [0-9]+ .*ozaki|rror"
}
for list in "distmm_old distmm" "distmm distmm_old" "distmm_old distmm"; do
  for v in $list; do
    for dt in f64 f32; do echo "$v $dt $(date +%T)"; run $v $dt; done
  done
  echo "round: $((SECONDS-start)) s"
done
echo "total: $((SECONDS-start)) s"
