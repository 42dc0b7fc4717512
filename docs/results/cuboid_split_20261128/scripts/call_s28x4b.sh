#!/usr/bin/env bash
# Session 28, 4-GPU check of the final cuboid: gpu-winograd keeps its whole products (as base),
# gpu-winograd-ozaki and gpu-ozaki split step 0.
source .device/env.sh
export NCCL_NVLS_ENABLE=0
M="mpirun --oversubscribe --bind-to none"
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
nvidia-smi -L | head -1
for v in "f64 gpu-winograd" "f32 gpu-winograd" "f64 gpu-winograd-ozaki"; do set -- $v
  for b in new base; do
    bin=build-old/distmm_base; [ $b = new ] && bin=build-dev/distmm
    echo "$1 $2 $b $(timeout 60 $M -n 4 $bin run --algo cuboid --engine $2 --dtype $1 --size 32768 --warmup 1 --repeat 3 --verify none 2>&1 | med)"
  done
done
