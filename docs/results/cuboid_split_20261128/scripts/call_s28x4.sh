#!/usr/bin/env bash
# Session 28, the 4-GPU call: the GPU tests on main (the cuboid change), then with cuBLAS inside
# JAX's sharded matmul (2-D blocks) against distmm's cuboid (new) in the same job, interleaved,
# and each GPU's own local GEMM (16384 x 16384 x 32768) from distmm and JAX; then the Strassen-like
# engines on 4 GPUs, base (bb6ea7f) against new.
source .device/env.sh
export NCCL_NVLS_ENABLE=0
M="mpirun --oversubscribe --bind-to none"
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
nvidia-smi -L
TLIMIT=200 bash build-dev/gpu_tests.sh 2>&1 | grep -v pmix
for r in 1 2; do
  for dt in f64 f32; do
    echo "jax r$r: $(timeout 150 python3 jobs/bench_jax_matmul.py --gpus 4 --n 32768 --dtypes $dt --layouts blocks --repeat 5 --no-check 2>&1 | grep -v '^bench-jax\|^W0\|^I0' | tail -1)"
    echo "distmm cuboid cublas $dt r$r $(timeout 90 $M -n 4 build-dev/distmm run --algo cuboid --engine cublas --dtype $dt --size 32768 --warmup 1 --repeat 5 --verify none 2>&1 | med)"
  done
done
for g in 0 1 2 3; do
  echo "GPU $g local f64 16384x16384x32768 distmm: $(CUDA_VISIBLE_DEVICES=$g timeout 60 build-dev/distmm run --engine cublas --dtype f64 --m 16384 --n 16384 --k 32768 --warmup 1 --repeat 5 --verify none 2>&1 | med)"
done
CUDA_VISIBLE_DEVICES=1 timeout 90 python3 jobs/bench_jax_local_gemm.py --shapes 16384x16384x32768 --dtypes f64 --repeat 5 2>&1 | grep "^jax"
for dt in f64 f32; do for e in gpu-winograd gpu-winograd-ozaki; do
  for b in base new; do
    bin=build-old/distmm_base; [ $b = new ] && bin=build-dev/distmm
    echo "$dt $e $b $(timeout 90 $M -n 4 $bin run --algo cuboid --engine $e --dtype $dt --size 32768 --warmup 1 --repeat 3 --verify none 2>&1 | med)"
  done
done; done
