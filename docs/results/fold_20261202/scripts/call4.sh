#!/usr/bin/env bash
# Session 35, call 4 (one H200): item 3 again after the two levels (session 34) and this
# session's folds: f64 49152 with the emulation's workspace capped at 20 GiB (with the operands'
# 58 GB, what an 80 GB GPU holds), planned, run with Freivalds' check, and against cuBLAS; then
# uncapped.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-s35
start=$SECONDS
DISTMM_EMULATION_WORKSPACE=20G timeout 60 $B/distmm plan --engine gpu-ozaki --dtype f64 --size 49152 2>&1 \
  | tee $OUT/plan_20G.txt | grep -iE "workspace|peak|error"
for cap in 20G none; do
  if [ $cap = none ]; then unset DISTMM_EMULATION_WORKSPACE; else export DISTMM_EMULATION_WORKSPACE=$cap; fi
  echo "workspace $cap $(date +%T)"
  timeout 120 $B/distmm run --engine gpu-ozaki --dtype f64 --size 49152 --verify freivalds \
    --json $OUT/run_$cap.jsonl > $OUT/run_$cap.txt 2>&1
  echo "rc $?"; grep -E "PASSED|FAILED|time|engine|error|moduli" $OUT/run_$cap.txt | head -8 | cut -c1-300
done
export DISTMM_EMULATION_WORKSPACE=20G
timeout 150 $B/distmm gpu-bench --dtype f64 --sizes 49152 --engines gpu-ozaki --repeat 3 \
  --json $OUT/bench_49152_20G.jsonl 2>&1 | grep -E "^\| [0-9]+ |rror" | cut -c1-300
echo "total: $((SECONDS-start)) s"
