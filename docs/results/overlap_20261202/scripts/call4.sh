#!/usr/bin/env bash
# Session 33, call 4 (one H200): call 1's prio124 (build-s33: every INT8 product, the bound's
# too, with the SM count target 124) against call 3's side8 (build-s33n: only the products that
# folds run beside) and base, f64 32768, three rounds rotated.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
start=$SECONDS
run() {
  case $1 in
    base) DISTMM_EMULATION_PRIORITY=0 timeout 100 build-s33/distmm gpu-bench --dtype f64 --sizes 32768 --engines gpu-ozaki --repeat 5 --no-error 2>&1 | grep -E "^\| [0-9]+ .*ozaki" ;;
    prio124) DISTMM_EMULATION_PRIORITY=1 DISTMM_EMULATION_SMS=124 timeout 100 build-s33/distmm gpu-bench --dtype f64 --sizes 32768 --engines gpu-ozaki --repeat 5 --no-error 2>&1 | grep -E "^\| [0-9]+ .*ozaki" ;;
    side8) DISTMM_EMULATION_SIDE_SMS=8 timeout 100 build-s33n/distmm gpu-bench --dtype f64 --sizes 32768 --engines gpu-ozaki --repeat 5 --no-error 2>&1 | grep -E "^\| [0-9]+ .*ozaki" ;;
  esac
}
for list in "base prio124 side8" "side8 base prio124" "prio124 side8 base"; do
  for v in $list; do echo "$v $(date +%T)"; run $v; done
done
echo "total: $((SECONDS-start)) s"
