#!/usr/bin/env bash
# Session 30, call 8 (one H200): the final binary's GPU unit tests (with gpu-winograd-ozaki's
# forwarding), then the emulation's error at f64 49152 against cuBLAS DGEMM's on the same
# inputs (gpu-bench: relative Frobenius error against a double-double reference on 256 sampled
# rows), issue 42 item 2's "error at most DGEMM's" for the local products of the 4-GPU run.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
nvidia-smi -L
start=$SECONDS
timeout 200 build-s30/distmm_unit_tests --gtest_color=no \
  --gtest_filter='Int8Emulation*:Ozaki*:GpuEngines*' 2>&1 | grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure|Expected|actual" | head -20
echo "unit: $((SECONDS-start)) s"
timeout 300 build-s30/distmm gpu-bench --dtype f64 --sizes 49152 --engines gpu-ozaki --repeat 3 2>&1 | grep -E "^\| [0-9]"
echo "total: $((SECONDS-start)) s"
