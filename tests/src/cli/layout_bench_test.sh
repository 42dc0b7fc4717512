#!/usr/bin/env bash
# `distmm layout-bench` at 4 ranks on an odd shape (37 x 29 x 41), every layout: exit 0, our C
# agreeing with PDGEMM's (or Freivalds' check passed), the JSON line; and bad options: one line
# naming the fix on rank 0, a non-zero exit, every rank gone (no hang).
# usage: layout_bench_test.sh DISTMM MPIEXEC
set -u
source "$(dirname "$0")/cli_checks.sh"  # bin, mpiexec, tmp, ok, bad, expect_error
run4() { timeout 120 "$mpiexec" -n 4 --oversubscribe "$bin" layout-bench "$@" >"$tmp/out" 2>"$tmp/err"; }

if "$bin" layout-bench --help >"$tmp/out" 2>&1 && grep -qi "usage" "$tmp/out" && grep -q -- "--no-pdgemm" "$tmp/out"; then
  ok "help"
else bad "help: $(cat "$tmp/out")"; fi

# expect_agreement NAME PATTERN ARGS...: exit 0, PATTERN in the report, one JSON line that passed.
expect_agreement() {
  local name=$1 pattern=$2
  shift 2
  run4 --m 37 --n 29 --k 41 --warmup 1 --repeat 2 "$@"
  local code=$?
  if [ "$code" -ne 0 ]; then bad "$name: exit $code: $(cat "$tmp/out" "$tmp/err")"
  elif ! grep -q "$pattern" "$tmp/out"; then bad "$name: no '$pattern' in: $(cat "$tmp/out")"
  elif [ "$(grep -c '^layout-bench {' "$tmp/out")" -ne 1 ] ||
       ! grep '^layout-bench {' "$tmp/out" | grep -q '"passed":true'; then
    bad "$name: JSON line: $(cat "$tmp/out")"
  else ok "$name"; fi
}
expect_agreement "block-cyclic nb 8" "agrees with PDGEMM" --layout block-cyclic --nb 8
expect_agreement "block-cyclic nb 5, 1x4 grid" "agrees with PDGEMM" --nb 5 --grid 1x4
expect_agreement "block-cyclic nb 64 (ranks holding nothing)" "agrees with PDGEMM"
expect_agreement "row slabs" "agrees with PDGEMM" --layout row-slabs
expect_agreement "column slabs" "agrees with PDGEMM" --layout col-slabs
expect_agreement "row slabs, f32, summa" "agrees with PDGEMM" --layout row-slabs --dtype f32 --algo summa
expect_agreement "column slabs without PDGEMM" "Freivalds.*PASSED" --layout col-slabs --no-pdgemm
if grep -q '"pdgemm_time_median"' "$tmp/out"; then bad "--no-pdgemm still timed PDGEMM"; else ok "--no-pdgemm"; fi
# The parts of our time (each the busiest rank's) add up to about the whole; the words moved are counted.
run4 --size 64 --layout row-slabs --repeat 1
if python3 -c 'import json,sys
r = json.loads(next(l for l in open(sys.argv[1]) if l.startswith("layout-bench {"))[len("layout-bench "):])
parts = r["redistribute_in_median"] + r["multiply_median"] + r["redistribute_out_median"]
assert r["time_median"] > 0 and r["multiply_median"] > 0 and 0.5 * r["time_median"] <= parts <= 4 * r["time_median"], r
assert r["moved_total"]["total"] >= r["moved_max"]["total"] > 0, r  # row slabs are no algorithm layout: something moves' "$tmp/out"; then
  ok "time parts and words"
else bad "time parts and words: $(cat "$tmp/out")"; fi
# Block-cyclic A, B and C that line up (nb 16 on the 2 x 2 grid: two wide panels): the drop-in's
# SUMMA on the layout itself, nothing moved, no redistribution time.
run4 --size 64 --nb 16 --repeat 1
if python3 -c 'import json,sys
r = json.loads(next(l for l in open(sys.argv[1]) if l.startswith("layout-bench {"))[len("layout-bench "):])
assert r["algo"] == "block-cyclic summa" and r["check"]["passed"], r
assert r["moved_total"]["total"] == 0 and r["in_place"] == {"a": True, "b": True, "c": True}, r
assert r["redistribute_in_median"] == 0 and r["redistribute_out_median"] == 0 and r["multiply_median"] > 0, r
assert r["algo_words_max"] > 0, r' "$tmp/out"; then
  ok "block-cyclic in place"
else bad "block-cyclic in place: $(cat "$tmp/out")"; fi

# Bad options at 4 ranks.
expect_error "unknown layout" "use block-cyclic, row-slabs or col-slabs" 4 layout-bench --layout diagonal
expect_error "grid not the ranks" "R \* C = 4 ranks: e.g. 2x2" 4 layout-bench --grid 3x3
expect_error "--nb with slabs" "applies only to --layout block-cyclic" 4 layout-bench --layout row-slabs --nb 8
expect_error "unknown dtype" "use f64 or f32" 4 layout-bench --dtype c64
expect_error "--size and --m" "give --size alone" 4 layout-bench --size 8 --m 4

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
