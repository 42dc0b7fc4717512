#!/usr/bin/env bash
# The command line as a user meets it: help, single-process mode, mpirun runs, the JSON record,
# and bad input: one line naming the fix on rank 0, exit code 2, every rank gone (no hang).
# usage: cli_test.sh DISTMM MPIEXEC
set -u
source "$(dirname "$0")/cli_checks.sh"  # bin, mpiexec, tmp, ok, bad, expect_error

# Help on every command.
for c in "" run info accuracy engine-bench; do
  if "$bin" $c --help >"$tmp/out" 2>&1 && grep -qi "usage" "$tmp/out"; then ok "help $c"
  else bad "help $c"; fi
done

# Single-node development mode: no mpirun.
if "$bin" run --size 97 --verify full >"$tmp/out" 2>&1 && grep -q "full: PASSED" "$tmp/out"; then
  ok "single process run"
else bad "single process run: $(cat "$tmp/out")"; fi
if "$bin" info >"$tmp/out" 2>&1 && grep -q "BLAS" "$tmp/out" && grep -q "engines" "$tmp/out" &&
   grep -qE "^  NCCL +(NCCL [0-9]+\.[0-9]+\.[0-9]+ \(|not found \(searched|not built)" "$tmp/out" &&
   [ "$(tr -d '\000' <"$tmp/out" | wc -c)" = "$(wc -c <"$tmp/out")" ]; then  # no stray NUL bytes
  ok "info"
else bad "info: $(cat "$tmp/out")"; fi

# Accuracy table, and an engine other than BLAS in a verified run.
if "$bin" accuracy --n 48 --levels 2 >"$tmp/out" 2>&1 && grep -qE "identity +winograd +2 " "$tmp/out"; then
  ok "accuracy"
else bad "accuracy: $(cat "$tmp/out")"; fi

# engine-bench: interleaved rounds, every engine's product checked against BLAS's.
if "$bin" engine-bench --sizes 37 64 --engines blas:0 winograd:1 mmra-shared:0 --repeat 2 >"$tmp/out" 2>&1 &&
   [ "$(grep -c '^| [0-9]' "$tmp/out")" -eq 6 ] && ! grep -qE '\| [0-9.]+e-0[0-9] \|$' "$tmp/out"; then
  ok "engine-bench"
else bad "engine-bench: $(cat "$tmp/out")"; fi
expect_error "engine-bench bad spec" "NAME:LEVELS" 0 engine-bench --sizes 8 --engines winograd:x
expect_error "engine-bench unknown engine" "blas" 0 engine-bench --sizes 8 --engines nosuch:0
if "$bin" run --size 300 --engine winograd --levels 2 --cutoff 32 --verify full >"$tmp/out" 2>&1 &&
   grep -q "full: PASSED" "$tmp/out" && grep -q "winograd (levels 2" "$tmp/out"; then ok "winograd run"
else bad "winograd run: $(cat "$tmp/out")"; fi

# Under mpirun, with the JSON record.
for algo in summa cannon scalapack auto; do
  rm -f "$tmp/r.json"
  if "$mpiexec" -n 4 --oversubscribe "$bin" run --m 61 --n 53 --k 47 --algo $algo --dtype f32 \
       --repeat 2 --json "$tmp/r.json" >"$tmp/out" 2>&1 &&
     grep -q "freivalds: PASSED" "$tmp/out" && [ "$(wc -l <"$tmp/r.json")" -eq 1 ] &&
     /usr/bin/python3 -c "import json,sys; r=json.loads(open(sys.argv[1]).read()); assert r['m']==61 and r['ranks']==4 and r['passed'] and len(r['times'])==2" "$tmp/r.json"; then
    ok "mpirun -n 4 $algo with --json"
  else bad "mpirun -n 4 $algo: $(cat "$tmp/out")"; fi
done
if "$mpiexec" -n 8 --oversubscribe "$bin" run --size 33 --algo dns --verify full --beta 0.5 >"$tmp/out" 2>&1 &&
   grep -q "full: PASSED" "$tmp/out"; then ok "mpirun -n 8 dns"
else bad "mpirun -n 8 dns: $(cat "$tmp/out")"; fi

# Complex types through every classical algorithm and CAPS, a complex alpha and beta, the JSON
# record of a complex scalar, and Strassen-like engines on complex operands.
for spec in "4 summa" "4 cannon" "4 scalapack" "8 dns" "7 caps" "1 auto"; do
  set -- $spec
  for dt in c32 c64; do
    rm -f "$tmp/z.json"
    if "$mpiexec" -n "$1" --oversubscribe "$bin" run --m 29 --n 31 --k 37 --algo "$2" --dtype $dt \
         --alpha 1.5-2j --beta 0.5j --verify full --threads 1 --json "$tmp/z.json" >"$tmp/out" 2>&1 &&
       grep -q "full: PASSED" "$tmp/out" &&
       /usr/bin/python3 -c "import json,sys; r=json.loads(open(sys.argv[1]).read()); assert r['dtype']=='$dt' and r['alpha']==[1.5,-2.0] and r['beta']==[0.0,0.5] and r['passed']" "$tmp/z.json"; then
      ok "mpirun -n $1 $2 $dt"
    else bad "mpirun -n $1 $2 $dt: $(cat "$tmp/out")"; fi
  done
done
# CAPS's steps and formula chosen by the cost model (--caps-steps auto, no --formula), verified.
if "$mpiexec" -n 7 --oversubscribe "$bin" run --size 300 --algo caps --caps-steps auto --threads 1 \
     >"$tmp/out" 2>&1 && grep -q "caps steps and formula by the cost model" "$tmp/out" &&
   grep -q "freivalds: PASSED" "$tmp/out"; then
  ok "caps --caps-steps auto"
else bad "caps --caps-steps auto: $(cat "$tmp/out")"; fi
# A Strassen-like product's error is bounded normwise only: with k = 1 (padded to 2 by a DFS
# step) a component far below max|A| max|B| took an error above its own |A||B| bound. A correct
# product must pass, in full and by Freivalds.
for v in full freivalds; do
  if "$mpiexec" -n 5 --oversubscribe "$bin" run --m 600 --n 3 --k 1 --algo caps --caps-steps D \
       --dtype f32 --verify "$v" --threads 1 --seed 91 --engine strassen-lowmem --levels 2 --cutoff 8 \
       >"$tmp/out" 2>&1 && grep -q "$v: PASSED" "$tmp/out"; then
    ok "caps D, k = 1, f32, verify $v"
  else bad "caps D, k = 1, f32, verify $v: $(cat "$tmp/out")"; fi
done
for spec in "strassen --levels 1 --cutoff 16" "strassen-lowmem --levels 1 --cutoff 16" \
            "winograd --levels 2 --cutoff 16" "mmra-tradeoff --block 16"; do
  engine=${spec%% *}
  if "$mpiexec" -n 4 --oversubscribe "$bin" run --size 150 --dtype c64 --engine $spec \
       --threads 1 --verify full >"$tmp/out" 2>&1 && grep -q "full: PASSED" "$tmp/out"; then
    ok "c64 with $engine"
  else bad "c64 with $engine: $(cat "$tmp/out")"; fi
done
if "$bin" accuracy --n 40 --levels 1 --dtype c32 >"$tmp/out" 2>&1 && grep -qE "identity +winograd +1 " "$tmp/out"; then
  ok "accuracy c32"
else bad "accuracy c32: $(cat "$tmp/out")"; fi
if "$bin" info >"$tmp/out" 2>&1 && grep -qE "c64 +16 bytes, BLAS z, NumPy <c16" "$tmp/out" &&
   grep -qE "winograd +host +f32, f64, c32, c64" "$tmp/out"; then
  ok "info lists the dtypes and each engine's"
else bad "info dtypes: $(cat "$tmp/out")"; fi

# distmm plan: what run then measures, exactly (words, messages, peak memory, bound), under
# mpirun and with --ranks alone; cuboid and auto on shapes and rank counts that factor badly.
for spec in "5 cuboid 97 5 31" "7 auto 40 33 2" "6 summa 17 19 23" "4 cannon 64 64 64" "8 dns 33 20 50" \
            "12 cuboid 3 67 200" "13 auto 200 200 200" "3 cuboid 1 1 13"; do
  set -- $spec
  rm -f "$tmp/plan.json" "$tmp/run.json"
  if "$mpiexec" -n "$1" --oversubscribe "$bin" plan --algo "$2" --m "$3" --n "$4" --k "$5" --threads 1 \
       --json "$tmp/plan.json" >/dev/null 2>"$tmp/err" &&
     "$bin" plan --ranks "$1" --algo "$2" --m "$3" --n "$4" --k "$5" --threads 1 --json - >"$tmp/plan2.json" 2>>"$tmp/err" &&
     "$mpiexec" -n "$1" --oversubscribe "$bin" run --algo "$2" --m "$3" --n "$4" --k "$5" --threads 1 \
       --fill integer --verify full --json "$tmp/run.json" >/dev/null 2>>"$tmp/err" &&
     /usr/bin/python3 -c "
import json, sys
p, q, r = (json.loads(open(f).read()) for f in sys.argv[1:4])
keys = ['algo', 'layout', 'words_max', 'words_mean', 'messages_max', 'peak_bytes', 'lower_bound_words', 'flops_max']
assert all(p[k] == r[k] == q[k] for k in keys), [(k, p[k], q[k], r[k]) for k in keys if not p[k] == q[k] == r[k]]
assert p['planned'] and not r['planned'] and r['passed'] and p['lower_bound_words'] > 0
" "$tmp/plan.json" "$tmp/plan2.json" "$tmp/run.json" 2>>"$tmp/err"; then
    ok "plan = run: P=$1 $2 $3x$4x$5"
  else bad "plan = run: P=$1 $2 $3x$4x$5: $(tail -5 "$tmp/err")"; fi
done
if "$mpiexec" -n 2 --oversubscribe "$bin" calibrate --file "$tmp/machine.json" >"$tmp/out" 2>&1 &&
   DISTMM_MACHINE_FILE="$tmp/machine.json" "$mpiexec" -n 4 --oversubscribe "$bin" run --size 64 >"$tmp/out2" 2>&1 &&
   grep -q "machine.json (distmm calibrate)" "$tmp/out2" && grep -q "auto: " "$tmp/out2"; then
  ok "calibrate, then auto reads the model"
else bad "calibrate: $(cat "$tmp/out" "$tmp/out2")"; fi

# The user's cuboid grid (--cuboid-grid PMxPNxPK) runs as given, on odd shapes, fully verified.
for g in "3 1x1x3 37 5 101" "4 1x2x2 13 29 7" "4 2x1x1 1 17 9"; do
  set -- $g
  if "$mpiexec" -n "$1" --oversubscribe "$bin" run --algo cuboid --cuboid-grid "$2" --m "$3" --n "$4" --k "$5" \
       --threads 1 --verify full >"$tmp/out" 2>&1 && grep -q "layout *$2 cuboids" "$tmp/out" &&
     grep -q "full: PASSED" "$tmp/out"; then ok "cuboid --cuboid-grid $2 on $3x$4x$5"
  else bad "cuboid --cuboid-grid $2 on $3x$4x$5: $(cat "$tmp/out")"; fi
done

# The device path without a GPU (--emulate-device): host inputs streamed in 2x2 stages, the
# first stage's product begun on its first k-part, and loaded whole; verified in full.
for extra in "" "--whole-first-stage"; do
  if "$mpiexec" -n 3 --oversubscribe "$bin" run --algo cuboid --cuboid-grid 1x1x3 --engine winograd --emulate-device --from-host \
       --stages 2x2 --m 67 --n 45 --k 31 --beta 2 --threads 1 --verify full $extra >"$tmp/out" 2>&1 &&
     grep -q "residency *emulated device" "$tmp/out" && grep -q "streamed *4 stages" "$tmp/out" &&
     grep -q "full: PASSED" "$tmp/out" &&
     { [ -n "$extra" ] || grep -q "first stage's product begun on its first k-part" "$tmp/out"; }; then
    ok "--emulate-device streamed ${extra:-split}"
  else bad "--emulate-device streamed ${extra:-split}: $(cat "$tmp/out")"; fi
done

# --algo auto (the default) on a streamed run chooses for the stages' products: a square
# product's 2x2 stages have k twice their sides, where cuboid's split of k moves fewer words than
# SUMMA (on the whole square product the two tie, and on a device cuboid is taken:
# auto_device.cpp); verified in full. Device
# runs price with the machine file's device section: one like the emulated device's (a core and
# MPI between ranks; the GPU defaults' 50 TFLOP/s and 20 us would idle a rank at this size).
echo '{"device": {"device": "emulated (a core)", "link_bytes_per_s": 2e9, "link_latency_s": 5e-6, "memory_bytes_per_s": 5e9,
  "rates": {"winograd": {"f64": [{"m": 256, "n": 256, "k": 256, "flops_per_s": 2e10}]}}}}' >"$tmp/emulated.json"
if DISTMM_MACHINE_FILE="$tmp/emulated.json" "$mpiexec" -n 2 --oversubscribe "$bin" run --engine winograd --emulate-device \
     --from-host --stages 2x2 --size 256 --threads 1 --verify full >"$tmp/out" 2>&1 &&
   grep -q "layout *1x1x2 cuboids" "$tmp/out" &&
   grep -q "chosen *for the stages' products: auto (device model): cuboid" "$tmp/out" &&
   grep -q "streamed *4 stages" "$tmp/out" && grep -q "full: PASSED" "$tmp/out" &&
   DISTMM_MACHINE_FILE="$tmp/emulated.json" "$mpiexec" -n 2 --oversubscribe "$bin" run --engine winograd --emulate-device \
     --size 256 --threads 1 >"$tmp/out2" 2>&1 &&
   grep -q "chosen *auto (device model): cuboid" "$tmp/out2"; then ok "--algo auto chooses for the streamed stages' products"
else bad "--algo auto for streamed stages: $(cat "$tmp/out" "$tmp/out2")"; fi

# The INT8 emulation's host twin (--engine ozaki) on the emulated device at each accuracy target
# (docs/accuracy.md): native and max verified in full; the report names the target, the moduli
# and the bound, the JSON the target.
for acc in native 1e-4 max; do
  rm -f "$tmp/acc.json"
  verify=full
  [ "$acc" = 1e-4 ] && verify=none  # (an error bound above the native one: beyond the check's)
  if "$mpiexec" -n 2 --oversubscribe "$bin" run --engine ozaki --emulate-device --dtype f32 --size 96 --threads 1 \
       --accuracy $acc --verify $verify --json "$tmp/acc.json" >"$tmp/out" 2>&1 &&
     { [ $verify = none ] || grep -q "full: PASSED" "$tmp/out"; } &&
     grep -q "accuracy $acc, [0-9-]* moduli, fast scaling, bound" "$tmp/out" &&
     grep -q "\"accuracy\":\"$acc\"" "$tmp/acc.json"; then ok "--engine ozaki --accuracy $acc on the emulated device"
  else bad "--engine ozaki --accuracy $acc: $(cat "$tmp/out")"; fi
done

# Phase times per rank: CAPS per level (sums, exchanges, combination), cuboid's gathers and
# reduction, in the report and the JSON line.
rm -f "$tmp/ph.json"
if "$mpiexec" -n 7 --oversubscribe "$bin" run --algo caps --caps-steps DB --size 98 --threads 1 \
     --json "$tmp/ph.json" >"$tmp/out" 2>&1 && grep -q "phase .*level 1 (BFS) exchange in" "$tmp/out" &&
   /usr/bin/python3 -c "
import json, sys
p = json.loads(open(sys.argv[1]).read())['phases']
assert p['level 1 (BFS) exchange in']['max'] > 0 and p['level 0 (DFS) forming S, T']['max'] > 0
assert p['leaf: local multiply']['max'] >= p['leaf: local multiply']['mean'] > 0
" "$tmp/ph.json"; then ok "caps phase times"
else bad "caps phase times: $(cat "$tmp/out")"; fi

# The plotting script on the JSON lines of real runs.
rm -f "$tmp/p.json"
for a in summa scalapack; do
  for n in 40 80; do
    "$mpiexec" -n 2 --oversubscribe "$bin" run --size $n --algo $a --quiet --json "$tmp/p.json" >/dev/null 2>&1
  done
done
here=$(cd "$(dirname "$0")" && pwd)
if /usr/bin/python3 "$here/../../../jobs/plot.py" "$tmp/p.json" --out "$tmp/plot" >"$tmp/out" 2>&1 &&
   [ -s "$tmp/plot_time.png" ] && [ -s "$tmp/plot_speedup.png" ] && [ -s "$tmp/plot_words.png" ]; then
  ok "plot.py"
else bad "plot.py: $(cat "$tmp/out")"; fi

# Bad input.
expect_error "zero size" "--m must be at least 1" 0 run --m 0
expect_error "negative size" "--k must be at least 1" 0 run --k -5
expect_error "absurd size" "exceeds 2^31-1" 0 run --size 99999999999
expect_error "too big for memory" "use more ranks" 0 run --size 2000000
expect_error "mem-limit" "per rank" 0 run --size 1000 --mem-limit 1M
expect_error "bad mem-limit" "not a size" 0 run --mem-limit lots
expect_error "unknown algo" "use one of auto" 0 run --algo fast
expect_error "unknown engine" "use one of" 0 run --engine turbo
expect_error "unknown dtype" "use f32, f64, c32, c64" 0 run --dtype f16
expect_error "complex alpha, real dtype" "use --dtype c32 or c64" 0 run --alpha 1+2j
expect_error "bad alpha" "is not a number" 0 run --alpha 1+j2
expect_error "bad op" "use N, T or C" 0 run --a x.npy --b y.npy --out z.npy --transa=X
expect_error "accuracy unknown dtype" "use f32, f64, c32, c64" 0 accuracy --dtype q8
expect_error "unknown verify" "none, freivalds or full" 0 run --verify maybe
expect_error "unknown flag" "--help" 0 run --frobnicate
expect_error "non-number" "--help" 0 run --m twelve
expect_error "no command" "--help" 0
expect_error "cannon on 6 ranks" "cannon needs a square number of ranks, got 6: use 4 or 9 ranks, or --algo summa" 6 run --algo cannon --size 12
expect_error "dns on 4 ranks" "dns needs a cube number of ranks, got 4" 4 run --algo dns --size 12
expect_error "bad size on 3 ranks" "--n must be at least 1" 3 run --n 0
expect_error "grid rows" "does not divide" 4 run --algo summa --grid-rows 3 --size 12

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
