#!/usr/bin/env bash
# Session 30, call 6 (4 GPUs): issue 42 item 1 at the larger sizes for the other engines (new
# binary): one-GPU gpu-bench rates (GPU 0), then each engine on 4 GPUs with --algo auto,
# verified (Freivalds on the GPUs), f64 49152 and f32 65536.
source .device/env.sh
export NCCL_NVLS_ENABLE=0 DISTMM_TUNING_FILE=docs/results/tuning_h100.json
M="mpirun --oversubscribe --bind-to none"
start=$SECONDS
for c in "f64 49152" "f32 65536"; do set -- $c
  echo "1gpu $1 $2"; CUDA_VISIBLE_DEVICES=0 timeout 200 build-s30/distmm gpu-bench --dtype $1 --sizes $2 --engines gpu-winograd gpu-winograd-ozaki --repeat 3 --no-error 2>&1 | grep -E "^\| [0-9]"
  echo "refs: $((SECONDS-start)) s"
done
for c in "f64 49152" "f32 65536"; do set -- $c
  for e in cublas gpu-winograd gpu-winograd-ozaki gpu-ozaki; do
    echo "== $1 $2 $e: $(timeout 90 $M -n 4 build-s30/distmm run --algo auto --engine $e --dtype $1 --size $2 --warmup 1 --repeat 3 2>&1 | grep -E "^ *(layout|time min|verification)" | sed 's/  */ /g' | tr '\n' '|')"
  done
  echo "$1: $((SECONDS-start)) s"
done
echo "total: $((SECONDS-start)) s"
