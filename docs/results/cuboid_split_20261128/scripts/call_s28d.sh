#!/usr/bin/env bash
# Session 28, call 3 (one GPU): JAX's GEMM against distmm's cuBLAS on the local shapes of the 2-
# and 4-GPU products (issue 42, item 2), XLA's autotuning on and off.
source .device/env.sh
nvidia-smi -L
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
for dt in f64 f32; do for s in "32768 32768 32768" "16384 16384 32768" "32768 16384 32768"; do
  set -- $s
  echo "distmm cublas $dt ${1}x${2}x${3}: $(timeout 60 build-dev/distmm run --engine cublas --dtype $dt --m $1 --n $2 --k $3 --warmup 1 --repeat 5 --verify none 2>&1 | med) s"
done; done
timeout 200 python3 build-dev/jax_shapes.py 2>&1 | grep -v "^W0\|^I0"
XLA_FLAGS=--xla_gpu_autotune_level=0 timeout 150 python3 build-dev/jax_shapes.py 2>&1 | grep -v "^W0\|^I0" | head -3
