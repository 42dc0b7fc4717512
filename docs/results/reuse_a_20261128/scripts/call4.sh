#!/usr/bin/env bash
# Session 30, call 4 (4 GPUs): four more rounds of call 2's base/new pairs (cuboid 2x2x1,
# gpu-ozaki, 32768, f64 and f32), the order alternating by round.
source .device/env.sh
export NCCL_NVLS_ENABLE=0 DISTMM_TUNING_FILE=docs/results/tuning_h100.json
M="mpirun --oversubscribe --bind-to none"
N=${N:-32768}
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
start=$SECONDS
for r in 4 5 6 7; do
  order="build-base/distmm build-s30/distmm"; [ $((r % 2)) = 0 ] && order="build-s30/distmm build-base/distmm"
  for dt in f32 f64; do
    for bin in $order; do
      echo "$dt gpu-ozaki $([ $bin = build-s30/distmm ] && echo new || echo base) r$r $(timeout 60 $M -n 4 $bin run --algo cuboid --engine gpu-ozaki --dtype $dt --size $N --warmup 1 --repeat 3 --verify none 2>&1 | med)"
    done
  done
  echo "round $r: $((SECONDS-start)) s"
done
CUDA_VISIBLE_DEVICES=0 timeout 100 build-s30/distmm gpu-bench --dtype f32 --sizes $N --engines gpu-ozaki --repeat 3 --no-error 2>&1 | grep -E "^\| [0-9]"
echo "total: $((SECONDS-start)) s"
