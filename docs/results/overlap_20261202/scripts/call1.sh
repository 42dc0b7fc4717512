#!/usr/bin/env bash
# Session 33, call 1 (one H200): do the folds hide behind the INT8 products when the products
# leave SMs free? Variants by environment (build-s33/distmm: main 74f1861 with two experiment
# switches, not committed: DISTMM_EMULATION_PRIORITY=1 put the products on a stream of the
# greatest priority, DISTMM_EMULATION_SMS=N set the SM count target of every INT8 product):
#   base: as main (products on the caller's stream, every SM);
#   prio: the products on a stream of the greatest priority;
#   prioN: the same, cuBLASLt told to target N SMs (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET).
# f64 at 16384 and 32768, two rounds, the order reversed in the second; then the same error at
# 8192 from base and prio124.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
B=build-s33/distmm
start=$SECONDS
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -l 1 > $OUT/smi.csv 2>&1 &
smi=$!
variant() {
  case $1 in
    base) echo "DISTMM_EMULATION_PRIORITY=0" ;;
    prio) echo "DISTMM_EMULATION_PRIORITY=1" ;;
    prio*) echo "DISTMM_EMULATION_PRIORITY=1 DISTMM_EMULATION_SMS=${1#prio}" ;;
  esac
}
list="base prio prio128 prio124 prio116"
for r in 1 2; do
  [ $r = 2 ] && list="prio116 prio124 prio128 prio base"
  for v in $list; do
    echo "r$r $v $(date +%T)"
    env $(variant $v) timeout 120 $B gpu-bench --dtype f64 --sizes 16384 32768 --engines gpu-ozaki --repeat 5 --no-error \
      --json $OUT/bench_$v.jsonl 2>&1 | grep -E "^\| [0-9]+ .*ozaki"
  done
  echo "round $r: $((SECONDS-start)) s"
done
for v in base prio124; do
  echo "f32 $v"; env $(variant $v) timeout 60 $B gpu-bench --dtype f32 --sizes 16384 --engines gpu-ozaki --repeat 5 --no-error 2>&1 | grep -E "^\| [0-9]+ .*ozaki"
  echo "err $v"; env $(variant $v) timeout 60 $B gpu-bench --dtype f64 --sizes 8192 --engines gpu-ozaki --repeat 1 2>&1 | grep -E "^\| [0-9]+ .*ozaki"
done
kill $smi
echo "total: $((SECONDS-start)) s"
