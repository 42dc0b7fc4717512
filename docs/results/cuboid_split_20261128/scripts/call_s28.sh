#!/usr/bin/env bash
# Session 28, call 1: cuboid's step 0 starting on the rank's own columns of B (new) against main
# at bb6ea7f (base), 4 GPUs, 2x2x1 cuboids, interleaved rounds; one-GPU gpu-bench references.
source .device/env.sh
export NCCL_NVLS_ENABLE=0
M="mpirun --oversubscribe --bind-to none"
N=${N:-32768} R=${ROUNDS:-3}
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
nvidia-smi -L
for dt in f64 f32; do
  CUDA_VISIBLE_DEVICES=0 timeout 100 build-dev/distmm gpu-bench --dtype $dt --sizes $N --engines gpu-ozaki --levels 1 --repeat 3 --no-error 2>&1 | grep -iE "cublas|ozaki" | head -4
done
for r in $(seq $R); do
  for dt in f64 f32; do for e in cublas gpu-ozaki; do
    for b in base new; do
      bin=build-old/distmm_base; [ $b = new ] && bin=build-dev/distmm
      [ $((r % 2)) = 0 ] && { bin=build-dev/distmm; [ $b = new ] && bin=build-old/distmm_base; b=$([ $b = new ] && echo base || echo new); }
      echo "$dt $e $b r$r $(timeout 90 $M -n 4 $bin run --algo ${ALGO:-cuboid} --engine $e --dtype $dt --size $N --warmup 1 --repeat 3 --verify none 2>&1 | med)"
    done
  done; done
done
for dt in f64 f32; do for e in cublas gpu-ozaki; do
  echo "verified new $dt $e: $(timeout 90 $M -n 4 build-dev/distmm run --algo cuboid --engine $e --dtype $dt --size $N --warmup 0 --repeat 1 2>&1 | grep -iE "verif|layout|cuboids" | tr '\n' '|')"
done; done
