#!/usr/bin/env bash
# Session 30, call 5 (4 GPUs): the larger sizes of issue 42 item 1 for gpu-ozaki: f64 49152 and
# f32 65536, cuboid 2x2x1, base against new (two rounds alternating), with one-GPU gpu-bench
# references from GPU 0 of the same job.
source .device/env.sh
export NCCL_NVLS_ENABLE=0 DISTMM_TUNING_FILE=docs/results/tuning_h100.json
M="mpirun --oversubscribe --bind-to none"
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
start=$SECONDS
for c in "f64 49152" "f32 65536"; do set -- $c
  echo "1gpu $1 $2"; CUDA_VISIBLE_DEVICES=0 timeout 150 build-s30/distmm gpu-bench --dtype $1 --sizes $2 --engines gpu-ozaki --repeat 3 --no-error 2>&1 | grep -E "^\| [0-9]"
  echo "refs: $((SECONDS-start)) s"
done
for r in 1 2; do
  order="build-base/distmm build-s30/distmm"; [ $r = 2 ] && order="build-s30/distmm build-base/distmm"
  for c in "f64 49152" "f32 65536"; do set -- $c
    for bin in $order; do
      echo "$1 $2 gpu-ozaki $([ $bin = build-s30/distmm ] && echo new || echo base) r$r $(timeout 80 $M -n 4 $bin run --algo cuboid --engine gpu-ozaki --dtype $1 --size $2 --warmup 1 --repeat 3 --verify none 2>&1 | med)"
    done
  done
  echo "round $r: $((SECONDS-start)) s"
done
echo "total: $((SECONDS-start)) s"
