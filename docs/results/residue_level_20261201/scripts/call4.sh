#!/usr/bin/env bash
# Session 31, call 4 (one H200): the split CRT with one reduction per group (f64), powers of two
# by multiplication instead of ldexp, 16-byte Winograd sums. 1. the emulation's GPU unit tests;
# 2. base (build-s31b: call 3's binary, 500f60a) against new, gpu-ozaki, alternating; 3. the passes
# of the new binary; 4. GEMMul8 beside distmm in one process (gemmul8_bench, errors measured);
# 5. gpu-winograd on the local product of a 4-GPU 2x2x1 grid at f64 49152 (issue 42, item 1).
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
B=build-s31
nvidia-smi -L
start=$SECONDS
timeout 200 $B/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*' 2>&1 |
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual" | head -30
echo "unit: $((SECONDS-start)) s"
for r in 1 2; do
  for b in base new; do
    bin=$B/distmm; [ $b = base ] && bin=build-s31b/distmm
    [ $r = 2 ] && { [ $b = base ] && bin=$B/distmm || bin=build-s31b/distmm; }
    name=$([ $bin = $B/distmm ] && echo new || echo base)
    for dt in f64 f32; do
      [ $dt = f32 ] && [ $r = 2 ] && continue
      echo "r$r $dt $name"
      timeout 100 $bin gpu-bench --dtype $dt --sizes 16384 32768 --engines gpu-ozaki --repeat 5 --no-error \
        --json $OUT/bench.jsonl 2>&1 | grep -E "^\| [0-9]+ .*gpu-ozaki"
    done
  done
  echo "round $r: $((SECONDS-start)) s"
done
for n in 16384 32768; do
  echo "profile f64 $n new: $(DISTMM_EMULATION_PROFILE=1 timeout 60 $B/distmm gpu-bench --dtype f64 --sizes $n --engines gpu-ozaki --repeat 1 --no-error 2>&1 | grep -E '^emulation' | tail -1)"
done
if [ -x $B/gemmul8_bench ]; then
  timeout 150 $B/gemmul8_bench --dtype f32 --sizes 16384 32768 --engines gpu-ozaki --gemmul8 7:fast 8:fast --repeat 5 \
    --json $OUT/gemmul8.jsonl 2>&1 | grep -E "^\| [0-9]|skip"
  echo "gemmul8 f32: $((SECONDS-start)) s"
  timeout 200 $B/gemmul8_bench --dtype f64 --sizes 16384 32768 --engines gpu-ozaki --gemmul8 14:fast 14:accurate 16:accurate \
    --repeat 5 --json $OUT/gemmul8.jsonl 2>&1 | grep -E "^\| [0-9]|skip"
  echo "gemmul8 f64: $((SECONDS-start)) s"
fi
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
for L in auto 2 3; do
  lv=""; [ $L != auto ] && lv="--levels $L"
  echo "gpu-winograd f64 24576x24576x49152 levels $L: $(timeout 60 $B/distmm run --engine gpu-winograd --dtype f64 --m 24576 --n 24576 --k 49152 $lv --warmup 1 --repeat 3 --verify none 2>&1 | tee /tmp/w.log | med) $(grep -oE 'gpu-winograd \([^)]*\)' /tmp/w.log | head -1)"
done
echo "total: $((SECONDS-start)) s"
