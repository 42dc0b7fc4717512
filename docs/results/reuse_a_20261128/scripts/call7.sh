#!/usr/bin/env bash
# Session 30, call 7 (4 GPUs): gpu-winograd-ozaki where its local product runs no level (the
# caller's ReuseOfA forwarded to the one emulated product) against gpu-ozaki, 4 GPUs, --algo
# auto, two rounds alternating, with one-GPU gpu-bench rows of gpu-winograd-ozaki at levels 0-2.
source .device/env.sh
export NCCL_NVLS_ENABLE=0 DISTMM_TUNING_FILE=docs/results/tuning_h100.json
M="mpirun --oversubscribe --bind-to none"
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
start=$SECONDS
for c in "f64 32768" "f32 32768"; do set -- $c
  echo "1gpu $1 $2"; CUDA_VISIBLE_DEVICES=0 timeout 100 build-s30/distmm gpu-bench --dtype $1 --sizes $2 --engines gpu-winograd-ozaki --levels 0 1 --repeat 3 --no-error 2>&1 | grep -E "^\| [0-9]"
done
echo "refs: $((SECONDS-start)) s"
for r in 1 2; do
  for c in "f64 49152" "f64 32768" "f32 32768"; do set -- $c
    order="gpu-winograd-ozaki gpu-ozaki"; [ $r = 2 ] && order="gpu-ozaki gpu-winograd-ozaki"
    for e in $order; do
      echo "$1 $2 $e r$r $(timeout 80 $M -n 4 build-s30/distmm run --algo auto --engine $e --dtype $1 --size $2 --warmup 1 --repeat 3 --verify none 2>&1 | med)"
    done
  done
  echo "round $r: $((SECONDS-start)) s"
done
echo "verified: $(timeout 80 $M -n 4 build-s30/distmm run --algo auto --engine gpu-winograd-ozaki --dtype f64 --size 32768 --warmup 0 --repeat 1 2>&1 | grep -E "^ *(layout|engine|verification)" | sed 's/  */ /g' | tr '\n' '|')"
echo "total: $((SECONDS-start)) s"
