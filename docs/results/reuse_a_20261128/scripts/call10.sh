#!/usr/bin/env bash
# Session 30, call 10 (2 GPUs): after the review's mends (held.N cleared before the buffer is
# regrown, the budget taken again after the bound's pass, the INT8 plans timed on the held
# slices, nothing held under a workspace cap, a failed hold not an error): the emulation's and
# engines' GPU unit tests on GPU 0, then cuboid's MPI device tests on both GPUs.
source .device/env.sh
export NCCL_NVLS_ENABLE=0
nvidia-smi -L
start=$SECONDS
CUDA_VISIBLE_DEVICES=0 timeout 200 build-s30/distmm_unit_tests --gtest_color=no \
  --gtest_filter='Int8Emulation*:Ozaki*:GpuEngines*' 2>&1 | grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure|Expected|actual|Which is" | head -20
echo "unit: $((SECONDS-start)) s"
timeout 100 mpirun --oversubscribe --bind-to none -n 2 build-s30/distmm_mpi_tests --gtest_color=no \
  --gtest_filter='DeviceRun.Cuboid*' 2>&1 | grep -v pmix | grep -E "OK \]|FAILED|PASSED|Failure|Expected" | head -10
echo "total: $((SECONDS-start)) s"
