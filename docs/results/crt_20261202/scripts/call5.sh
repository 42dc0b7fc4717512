#!/usr/bin/env bash
# Session 32, call 5 (one H200): the CRT (one reduction / Montgomery's Garner step, 16-byte
# stores of C through one rounding rule) and the f64 slices without a conversion per modulus.
# GPU unit tests; the CRT kernel's SASS opcode counts; base (main 6d70be4) against new: the
# passes and the whole product, f64 and f32 at 16384 and 32768, two rounds with the order swapped.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json
start=$SECONDS
timeout 200 build-s32n/distmm_unit_tests --gtest_color=no --gtest_filter='Int8Emulation*:Ozaki*' 2>&1 |
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==|Failure|Expected|Which is|actual|of [0-9]+x" | head -30
echo "unit: $((SECONDS-start)) s"
cuobjdump --dump-sass build-s32n/distmm > $OUT/sass.txt 2>/dev/null
awk '/Function :/ {f=$3} /^ +\/\*[0-9a-f]{4}\*\// {n[f]++; split($0,a," "); op=a[2]; if (op ~ /^@/) op=a[3]; gsub(/[;]/,"",op); h[f" "op]++} END {for (k in n) print n[k], k}' $OUT/sass.txt | grep -E "crt_combine|to_slices" | sort -k2 | head -40
awk '/Function :/ {f=$3} /^ +\/\*[0-9a-f]{4}\*\// && f ~ /crt_combineIdLb0ELNS0_7CrtFormE1ELi4/ {split($0,a," "); op=a[2]; if (op ~ /^@/) op=a[3]; gsub(/[;]/,"",op); h[op]++} END {for (k in h) printf "%s:%d ", k, h[k]; print ""}' $OUT/sass.txt
echo "sass: $((SECONDS-start)) s"
for r in 1 2; do
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
echo "total: $((SECONDS-start)) s"
