#!/usr/bin/env bash
# Session 33, call 5 (one H200): the final binary (build-s33n, DISTMM_EMULATION_SIDE_SMS=auto: 8 SMs
# left to the folds where a fold at the memory's peak rate outlasts their share of the products).
# GPU unit tests; gpu_tests.sh at one rank; base (build-s33, as main) against new, f64 and f32 at
# 16384 and 32768, two rounds, the order reversed in the second.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
start=$SECONDS
timeout 150 build-s33n/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*:GpuEngines*' > $OUT/unit.txt 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" $OUT/unit.txt | head -20
echo "unit: $((SECONDS-start)) s"
timeout 100 bash tests/cuda/gpu_tests.sh build-s33n/distmm build-s33n/distmm_mpi_tests mpirun > $OUT/gpu_tests.txt 2>&1
echo "gpu_tests rc $?"; grep -E "^\[  (FAILED|PASSED) |^\[==|gpu_tests|Failure" $OUT/gpu_tests.txt | head -12
echo "gpu_tests: $((SECONDS-start)) s"
run() {  # variant dtype
  local bin=build-s33n/distmm; [ $1 = base ] && bin=build-s33/distmm
  timeout 60 $bin gpu-bench --dtype $2 --sizes 16384 32768 --engines gpu-ozaki --repeat 5 --no-error \
    --json $OUT/bench_$1.jsonl 2>&1 | grep -E "^\| [0-9]+ .*ozaki"
}
for list in "base new" "new base"; do
  for v in $list; do
    for dt in f64 f32; do echo "$v $dt $(date +%T)"; run $v $dt; done
  done
  echo "round: $((SECONDS-start)) s"
done
echo "total: $((SECONDS-start)) s"
