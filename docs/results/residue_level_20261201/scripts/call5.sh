#!/usr/bin/env bash
# Session 31, call 5 (one H200): the final binary (the level, 16-byte sums, powers of two by
# multiplication; call 4's one-reduction CRT taken back: it was slower). Its GPU unit tests, then
# base (build-s31b: 500f60a) against final, gpu-ozaki at 16384 and 32768, one round each way.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
B=build-s31
nvidia-smi -L
start=$SECONDS
timeout 200 $B/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*:GpuEngines*' 2>&1 |
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" | head -30
echo "unit: $((SECONDS-start)) s"
for b in base new new base; do
  bin=$B/distmm; [ $b = base ] && bin=build-s31b/distmm
  for dt in f64 f32; do
    echo "$dt $b"
    timeout 100 $bin gpu-bench --dtype $dt --sizes 16384 32768 --engines gpu-ozaki --repeat 5 --no-error \
      --json $OUT/bench.jsonl 2>&1 | grep -E "^\| [0-9]+ .*gpu-ozaki"
  done
  echo "$b: $((SECONDS-start)) s"
done
echo "total: $((SECONDS-start)) s"
