#!/usr/bin/env bash
# Session 28, call 2 (2 GPUs): cuboid 2x1x1 (B gathered: all of it now behind the product on the
# rank's own columns) against 1x2x1 (A gathered, exposed), new, and base's 1x2x1 and 2x1x1,
# interleaved; one-GPU gpu-bench references.
source .device/env.sh
export NCCL_NVLS_ENABLE=0
M="mpirun --oversubscribe --bind-to none"
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
nvidia-smi -L
for dt in f64 f32; do
  CUDA_VISIBLE_DEVICES=0 timeout 100 build-dev/distmm gpu-bench --dtype $dt --sizes 32768 --engines gpu-ozaki --levels 1 --repeat 3 --no-error 2>&1 | grep "^|" | grep -v "^| n "
done
for r in 1 2; do
  for dt in f64 f32; do for e in cublas gpu-ozaki; do
    for v in "new 2x1x1" "base 2x1x1" "new 1x2x1" "base 1x2x1"; do
      set -- $v; bin=build-old/distmm_base; [ $1 = new ] && bin=build-dev/distmm
      echo "$dt $e $v r$r $(timeout 90 $M -n 2 $bin run --algo cuboid --cuboid-grid $2 --engine $e --dtype $dt --size 32768 --warmup 1 --repeat 3 --verify none 2>&1 | med)"
    done
  done; done
done
for dt in f64 f32; do for e in cublas gpu-ozaki; do
  echo "verified new 2x1x1 $dt $e: $(timeout 90 $M -n 2 build-dev/distmm run --algo cuboid --cuboid-grid 2x1x1 --engine $e --dtype $dt --size 32768 --warmup 0 --repeat 1 2>&1 | grep -iE "verif" | tr -s ' ' | tr '\n' '|')"
done; done
