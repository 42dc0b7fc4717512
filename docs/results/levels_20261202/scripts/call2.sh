#!/usr/bin/env bash
# Session 34, call 2 (one H200): the final binary (build-s34, the workspace rule mended): the
# emulation's GPU unit tests and gpu_tests.sh at one rank.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-s34
start=$SECONDS
timeout 200 $B/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*:GpuEngines*' > $OUT/unit.txt 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" $OUT/unit.txt | head -24
echo "unit: $((SECONDS-start)) s"
timeout 100 bash tests/cuda/gpu_tests.sh $B/distmm $B/distmm_mpi_tests mpirun > $OUT/gpu_tests.txt 2>&1
echo "gpu_tests rc $?"; grep -E "^\[  (FAILED|PASSED) |^\[==|gpu_tests|Failure" $OUT/gpu_tests.txt | head -12
echo "total: $((SECONDS-start)) s"
