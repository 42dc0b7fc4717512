#!/usr/bin/env bash
# Session 32, call 7 (one H200): the final binary. GPU unit tests; gpu_tests.sh at one rank (the
# distributed tests with GPU engines); f64 at 16384 and 32768 without the profile (the passes
# overlap on two streams), base (main 6d70be4) against new, three rounds alternating, with the
# SM clock and power sampled each second.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
start=$SECONDS
timeout 200 build-s32n/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*:GpuEngines*' > $OUT/unit.txt 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" $OUT/unit.txt | head -20
echo "unit: $((SECONDS-start)) s"
timeout 200 bash tests/cuda/gpu_tests.sh build-s32n/distmm build-s32n/distmm_mpi_tests mpirun > $OUT/gpu_tests.txt 2>&1
echo "gpu_tests rc $?"; grep -E "^\[  (FAILED|PASSED) |^\[==|gpu_tests|Failure" $OUT/gpu_tests.txt | head -12
echo "gpu_tests: $((SECONDS-start)) s"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -l 1 > $OUT/smi.csv 2>&1 &
smi=$!
for r in 1 2 3; do
  for b in base new; do
    [ $r = 2 ] && { [ $b = base ] && b=new || b=base; }
    bin=build-s32n/distmm; [ $b = base ] && bin=build-s32/distmm
    echo "r$r f64 $b $(date +%T)"
    timeout 100 $bin gpu-bench --dtype f64 --sizes 16384 32768 --engines gpu-ozaki --repeat 5 --no-error \
      --json $OUT/bench.jsonl 2>&1 | grep -E "^\| [0-9]+ .*ozaki"
  done
  echo "round $r: $((SECONDS-start)) s"
done
kill $smi
echo "total: $((SECONDS-start)) s"
