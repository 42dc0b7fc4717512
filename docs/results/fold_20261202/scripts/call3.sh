#!/usr/bin/env bash
# Session 35, call 3 (one H200): the final binary's remaining GPU tests (GpuEngines*, and
# tests/cuda/gpu_tests.sh at one rank), then DISTMM_EMULATION_SIDE_SMS 4 and 12 beside auto (8
# at f64 32768), two rounds, the order reversed in the second.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-s35
start=$SECONDS
timeout 120 $B/distmm_unit_tests --gtest_color=no --gtest_filter='GpuEngines*' > $OUT/unit.txt 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" $OUT/unit.txt | head -24
timeout 120 bash tests/cuda/gpu_tests.sh $B/distmm $B/distmm_mpi_tests mpirun > $OUT/gpu_tests.txt 2>&1
echo "gpu_tests.sh rc $?"; grep -E "PASSED|FAILED|tests ran" $OUT/gpu_tests.txt | tail -4
echo "tests: $((SECONDS-start)) s"
run() {  # side SMs (auto: unset)
  if [ "$1" = auto ]; then unset DISTMM_EMULATION_SIDE_SMS; else export DISTMM_EMULATION_SIDE_SMS=$1; fi
  timeout 60 $B/distmm gpu-bench --dtype f64 --sizes 32768 --engines gpu-ozaki --repeat 5 --no-error \
    --json $OUT/bench_side_$1.jsonl 2>&1 | grep -E "^\| [0-9]+ .*ozaki|rror"
}
for list in "auto 4 12" "12 4 auto"; do
  for v in $list; do echo "side $v $(date +%T)"; run $v; done
done
echo "total: $((SECONDS-start)) s"
