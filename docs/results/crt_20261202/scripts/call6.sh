#!/usr/bin/env bash
# Session 32, call 6 (one H200): the final binary (call 5's plus the transposed slices written four
# bytes at a time). GPU unit tests; the error of base and new at 8192 (the same integers: the same
# error); base (main 6d70be4) against new, f64 and f32 at 16384 and 32768, three rounds alternating,
# the passes of each; c64 and c32 at 16384.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
start=$SECONDS
timeout 200 build-s32n/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*' > $OUT/unit.txt 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual|of [0-9]+x" $OUT/unit.txt | head -20
echo "unit: $((SECONDS-start)) s"
for b in base new; do
  bin=build-s32n/distmm; [ $b = base ] && bin=build-s32/distmm
  for dt in f64 f32; do
    echo "error $dt $b"; timeout 60 $bin gpu-bench --dtype $dt --sizes 8192 --engines gpu-ozaki --repeat 1 2>&1 | grep -E "^\| [0-9]+ "
  done
done
echo "error: $((SECONDS-start)) s"
for r in 1 2 3; do
  for b in base new; do
    [ $r = 2 ] && { [ $b = base ] && b=new || b=base; }
    bin=build-s32n/distmm; [ $b = base ] && bin=build-s32/distmm
    for dt in f64 f32; do
      echo "r$r $dt $b"
      DISTMM_EMULATION_PROFILE=1 timeout 100 $bin gpu-bench --dtype $dt --sizes 16384 32768 --engines gpu-ozaki --repeat 5 --no-error \
        --json $OUT/bench.jsonl 2>&1 | grep -E "^emulation|^\| [0-9]+ " | sed 's/exponents+alloc [0-9.]* ms, //' | awk '/^emulation/ {c[$2]++; if (c[$2] == 4) print; next} {print}'
    done
  done
  echo "round $r: $((SECONDS-start)) s"
done
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
for b in base new; do
  bin=build-s32n/distmm; [ $b = base ] && bin=build-s32/distmm
  for dt in c64 c32; do
    echo "$dt $b $(timeout 60 $bin run --engine gpu-ozaki --dtype $dt --size 16384 --warmup 1 --repeat 3 --verify none 2>&1 | med)"
  done
done
echo "total: $((SECONDS-start)) s"
