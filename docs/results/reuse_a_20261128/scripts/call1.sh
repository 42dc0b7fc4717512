#!/usr/bin/env bash
# Session 30, call 1 (4 GPUs): the GPU unit tests of the emulation and engines (sessions 29's
# last two commits and this session's ReuseOfA), then the MPI device tests of cuboid at 2 and 4
# GPUs (the parts reusing op(A)'s slices, every grid).
source .device/env.sh
export NCCL_NVLS_ENABLE=0
nvidia-smi -L
start=$SECONDS
CUDA_VISIBLE_DEVICES=0 timeout 300 build-s30/distmm_unit_tests --gtest_color=no \
  --gtest_filter='Int8Emulation*:Ozaki*:GpuEngines*:DeviceRandom*:Tuned*' 2>&1 | grep -E "^\[  (FAILED|PASSED|SKIPPED) |OK \] |Failure|Expected|Which is|error" | head -80
echo "unit: $((SECONDS-start)) s"
for np in 2 4; do
  timeout 200 mpirun --oversubscribe --bind-to none -n $np build-s30/distmm_mpi_tests --gtest_color=no \
    --gtest_filter='DeviceRun.Cuboid*' 2>&1 | grep -v pmix | grep -E "OK \]|FAILED|PASSED|Failure|engine|Expected" | head -30
  echo "mpi np $np: $((SECONDS-start)) s"
done
