#!/usr/bin/env bash
# Session 30, call 7 (4 GPUs): gpu-winograd-ozaki where its local product runs no level (the
# caller's ReuseOfA now forwarded to its one emulated product) against gpu-ozaki, 4 GPUs, --algo
# auto, alternating, with one-GPU gpu-bench rows of gpu-winograd-ozaki (GPU 0, same job).
source .device/env.sh
export NCCL_NVLS_ENABLE=0 DISTMM_TUNING_FILE=docs/results/tuning_h100.json
M="mpirun --oversubscribe --bind-to none"
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
start=$SECONDS
echo "1gpu f64 49152"; CUDA_VISIBLE_DEVICES=0 timeout 100 build-s30/distmm gpu-bench --dtype f64 --sizes 49152 --engines gpu-winograd-ozaki --levels 0 --repeat 3 --no-error 2>&1 | grep -E "^\| [0-9]"
for r in 1 2; do
  order="gpu-winograd-ozaki gpu-ozaki"; [ $r = 2 ] && order="gpu-ozaki gpu-winograd-ozaki"
  for e in $order; do
    echo "f64 49152 $e r$r $(timeout 80 $M -n 4 build-s30/distmm run --algo auto --engine $e --dtype f64 --size 49152 --warmup 1 --repeat 3 --verify none 2>&1 | med)"
  done
  echo "round $r: $((SECONDS-start)) s"
done
echo "1gpu f32 32768"; CUDA_VISIBLE_DEVICES=0 timeout 100 build-s30/distmm gpu-bench --dtype f32 --sizes 32768 --engines gpu-winograd-ozaki --levels 0 1 --repeat 3 --no-error 2>&1 | grep -E "^\| [0-9]"
echo "f32 32768 gpu-winograd-ozaki: $(timeout 80 $M -n 4 build-s30/distmm run --algo auto --engine gpu-winograd-ozaki --dtype f32 --size 32768 --warmup 1 --repeat 3 2>&1 | grep -E "^ *(layout|engine|time min|verification)" | sed 's/  */ /g' | tr '\n' '|')"
echo "total: $((SECONDS-start)) s"
