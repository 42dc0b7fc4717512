#!/usr/bin/env bash
# Session 30, call 3 (4 GPUs): the reuse unit test again (its wide cases mended), then one full
# report each of base and new cuboid 2x2x1 gpu-ozaki f32 32768 (phase times), and the passes of
# rank 0's two parts under DISTMM_EMULATION_PROFILE (serialised).
source .device/env.sh
export NCCL_NVLS_ENABLE=0 DISTMM_TUNING_FILE=docs/results/tuning_h100.json
M="mpirun --oversubscribe --bind-to none"
start=$SECONDS
CUDA_VISIBLE_DEVICES=0 timeout 200 build-s30/distmm_unit_tests --gtest_color=no \
  --gtest_filter='Int8Emulation.PartsOf*:Int8Emulation.RowBlocks*:Int8Emulation.ProductBound*' 2>&1 | grep -E "^\[  (FAILED|PASSED|SKIPPED) |OK \] |Failure|Expected|Which is|actual|error" | head -40
echo "unit: $((SECONDS-start)) s"
for bin in build-base/distmm build-s30/distmm; do
  echo "== $bin"
  timeout 90 $M -n 4 $bin run --algo cuboid --engine gpu-ozaki --dtype f32 --size 32768 --warmup 1 --repeat 3 --verify none 2>&1 | grep -vE "^ *(input|output|launch|host|mpi|gpus|nccl)" | head -60
done
for bin in build-base/distmm build-s30/distmm; do
  echo "== profile $bin"
  DISTMM_EMULATION_PROFILE=1 timeout 90 $M -n 4 -x DISTMM_EMULATION_PROFILE $bin run --algo cuboid --engine gpu-ozaki --dtype f32 --size 32768 --warmup 0 --repeat 1 --verify none 2>&1 | grep -iE "ms,|bound of" | head -12
done
echo "total: $((SECONDS-start)) s"
