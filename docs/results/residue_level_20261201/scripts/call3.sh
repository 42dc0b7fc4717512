#!/usr/bin/env bash
# Session 31, call 3 (one H200): the level for complex products too (the stacked operands'
# halves are Re and Im). 1. the GPU unit tests of the engines; 2. the MPI tests with GPU engines
# at one rank (gpu_tests.sh); 3. c32 and c64 at 16384, device-resident `distmm run` with
# cuBLAS and with gpu-ozaki, the level off and on, alternating, two rounds; Freivalds-verified
# runs with the level at c64, f64 and f32 16384.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-s31
nvidia-smi -L
start=$SECONDS
timeout 300 $B/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*:GpuEngines*:DeviceRandom*:Tuned*' 2>&1 |
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" | head -40
echo "unit: $((SECONDS-start)) s"
timeout 200 bash tests/cuda/gpu_tests.sh $B/distmm $B/distmm_mpi_tests mpirun 2>&1 | grep -E "^\[  (FAILED|PASSED) |^\[==|gpu_tests|Failure" | head -20
echo "gpu_tests: $((SECONDS-start)) s"
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
for r in 1 2; do
  for dt in c32 c64; do
    echo "r$r $dt cublas $(timeout 60 $B/distmm run --engine cublas --dtype $dt --size 16384 --warmup 1 --repeat 3 --verify none 2>&1 | med)"
    for lv in 0 1; do
      [ $r = 2 ] && lv=$((1 - lv))
      echo "r$r $dt gpu-ozaki level $lv $(DISTMM_EMULATION_LEVEL=$lv timeout 60 $B/distmm run --engine gpu-ozaki --dtype $dt --size 16384 --warmup 1 --repeat 3 --verify none 2>&1 | med)"
    done
  done
  echo "round $r: $((SECONDS-start)) s"
done
for dt in c64 f64 f32; do
  echo "verified $dt: $(timeout 60 $B/distmm run --engine gpu-ozaki --dtype $dt --size 16384 2>&1 | grep -E "^  (engine|verification)" | tr -s ' ' | tr '\n' '|')"
done
echo "total: $((SECONDS-start)) s"
