#!/usr/bin/env bash
# distmm from Python on GPU arrays against the CLI's device-resident run of the same product, and
# JAX's sharded matmul on the same GPUs (issue 41, item 6). For each P in PS and dtype in DTYPES,
# in ROUNDS interleaved rounds (each round: every step once, in turn):
#   - CLI: mpirun -n P $BUILD/distmm run --engine cublas --algo $ALGO --dtype D --size N
#     --warmup 1 --repeat $REPEAT --verify none: data made on the GPUs, the algorithm's own layout;
#   - Python: mpirun -n P python3 jobs/bench_python_gpu.py: CuPy arrays in LAYOUTS (blocks: the
#     algorithm's pieces, Fortran order, used in place; rows: C-order row slabs; rows-f: Fortran-
#     order row slabs; blocks-c: C-order blocks; auto: blocks, rows, and rows-f where rows is the
#     algorithm's own layout (distmm's 1 x 2 grid at P = 2)), planned once, executed REPEAT times,
#     checked (Freivalds);
#   - JAX: python3 jobs/bench_jax_matmul.py on the first P GPUs (CUDA_VISIBLE_DEVICES): jit(matmul)
#     with A, B, C in 2-D blocks of the same grid and in row slabs.
# The table comes last (also $OUT/table.md): per (P, dtype, layout) the median over the rounds of
# each run's median; CLI / Python is the time ratio the issue's target reads (>= 0.95 where the
# layout is the algorithm's, i.e. A, B and C all in place); elsewhere the extra time over the CLI
# is the price of the layout. JAX / distmm > 1: distmm faster.
# Environment: PS ("2 4"), DTYPES ("f64 f32"), N (32768), ROUNDS (3), REPEAT (10, made even),
# ALGO (summa), LAYOUTS (auto), JAX_LAYOUTS ("blocks rows"), BUILD (build-dev),
# OUT (a new temporary folder: raw logs and JSON lines), PYTHON (python3), MPIRUN ("mpirun
# --oversubscribe --bind-to none"), STEP_TIMEOUT (180 s a step), BUDGET_S (500: no step starts
# that would, at its duration in the round before, end past this many seconds from the start; a
# row's rounds are then fewer, the table says how many), JAX (1; 0: no JAX), TABLE_ONLY=1 (run
# nothing: the table of OUT's JSON lines).
# HOST_SMOKE=1: a test of this script's plumbing without GPUs, N 300, PS 2, no JAX unless JAX=1:
# the device path on the emulated device (host memory; bench_python_gpu.py --host --emulate-device
# and the CLI's --emulate-device --engine blas); HOST_SMOKE=host: host memory on both sides.
# On the GPU machine (carrying the built tree as build-dev):
#   source .device/env.sh && bash jobs/bench_python_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
smoke=${HOST_SMOKE:-}
n=${N:-$([ -n "$smoke" ] && echo 300 || echo 32768)}
ps=${PS:-$([ -n "$smoke" ] && echo 2 || echo "2 4")}
dtypes=${DTYPES:-"f64 f32"}
rounds=${ROUNDS:-3}
repeat=${REPEAT:-10}
repeat=$(( repeat + repeat % 2 ))  # even: GPUs at their power cap swing (jobs/bench_multigpu.sh)
algo=${ALGO:-summa}
layouts=${LAYOUTS:-auto}
jax_layouts=${JAX_LAYOUTS:-"blocks rows"}
build=${BUILD:-build-dev}
py=${PYTHON:-python3}
step_timeout=${STEP_TIMEOUT:-180}
budget=${BUDGET_S:-500}
want_jax=${JAX:-$([ -n "$smoke" ] && echo 0 || echo 1)}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}  # NVLink multicast off (it misbehaves on these hosts)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=${MPIRUN:-"mpirun --oversubscribe --bind-to none"}
start=$SECONDS
log() { printf '[%s +%4ds] %s\n' "$(date +%H:%M:%S)" $(( SECONDS - start )) "$*"; }

if [ -z "${TABLE_ONLY:-}" ]; then
  [ -x "$build/distmm" ] || { echo "bench_python_gpu.sh: no $build/distmm (BUILD=the build folder)" >&2; exit 2; }
  [ -d "$build/python/distmm" ] || { echo "bench_python_gpu.sh: no $build/python/distmm" >&2; exit 2; }
  export PYTHONPATH="$PWD/$build/python${PYTHONPATH:+:$PYTHONPATH}"
  engine=cublas
  pyflags=""
  cliflags=""
  if [ -n "$smoke" ]; then
    engine=blas
    pyflags="--host"
    if [ "$smoke" != host ]; then
      pyflags="--host --emulate-device"
      cliflags="--emulate-device"
    fi
  else
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
    [ "${gpus:-0}" -ge 1 ] || { echo "bench_python_gpu.sh: no GPU visible (nvidia-smi -L); HOST_SMOKE=1 tests on the host" >&2; exit 1; }
    keep=""
    for p in $ps; do
      if [ "$p" -le "$gpus" ]; then keep="$keep $p"; else log "P=$p skipped: $gpus GPUs"; fi
    done
    ps=$keep
    "$build/distmm" info 2>&1 | grep -iE "nccl|gpu" | head -5
  fi
  if [ "$want_jax" = 1 ] && ! "$py" -c "import jax" 2>/dev/null; then
    log "no JAX in $py: the JAX steps are skipped"
    want_jax=0
  fi
  visible=${CUDA_VISIBLE_DEVICES:-$(seq -s, 0 $(( ${gpus:-1} - 1 )))}
  log "P: $ps; dtypes: $dtypes; n $n; $rounds rounds of $repeat runs; algorithm $algo; layouts $layouts; JAX $([ "$want_jax" = 1 ] && echo "$jax_layouts" || echo off); logs in $out"

  # step NAME LOGFILE CMD...: CMD under timeout, its output to LOGFILE; returns its status. A step
  # that, at its last round's duration, would end past BUDGET_S is skipped (status 3).
  declare -A took
  step() {
    local name=$1 file=$2
    shift 2
    local t0=$SECONDS rc
    : > "$file"
    if [ $(( SECONDS - start + ${took[$name]:-0} )) -gt "$budget" ]; then
      log "$name: skipped: at its last duration (${took[$name]} s) it would end past BUDGET_S=$budget s"
      return 3
    fi
    timeout -k 15 "$step_timeout" "$@" > "$file" 2>&1
    rc=$?
    took[$name]=$(( SECONDS - t0 ))
    if [ $rc -ne 0 ]; then
      log "$name: FAILED (status $rc$([ $rc = 124 ] && echo ", past STEP_TIMEOUT $step_timeout s"), $(( SECONDS - t0 )) s); the end of $file:"
      tail -n 8 "$file" | sed 's/^/    /'
    else
      log "$name: done in $(( SECONDS - t0 )) s"
    fi
    return $rc
  }
  jax_ok=$want_jax
  for round in $(seq "$rounds"); do
    log "round $round of $rounds"
    for p in $ps; do
      for dt in $dtypes; do
        f="$out/cli_p${p}_${dt}_r${round}.log"
        # shellcheck disable=SC2086  # $mpirun, $cliflags: a command and its options
        if step "CLI P=$p $dt" "$f" $mpirun -n "$p" "$build/distmm" run --engine "$engine" --algo "$algo" --dtype "$dt" \
            --size "$n" --warmup 1 --repeat "$repeat" --verify none --json "$out/cli.jsonl" $cliflags; then
          grep -E "time min / median|layout  " "$f" | sed "s/^ */    CLI P=$p $dt: /"
        fi
      done
      f="$out/python_p${p}_r${round}.log"
      # shellcheck disable=SC2086  # $mpirun, $dtypes, $layouts: word lists
      step "Python P=$p" "$f" $mpirun -n "$p" "$py" jobs/bench_python_gpu.py $pyflags --n "$n" --dtypes $dtypes \
        --layouts $layouts --warmup 1 --repeat "$repeat" --algo "$algo" --json "$out/python.jsonl" --tag "round$round"
      grep '^python P=' "$f" | sed 's/^/    /'
      if [ "$jax_ok" = 1 ]; then
        devs=$(echo "$visible" | cut -d, -f1-"$p")
        f="$out/jax_p${p}_r${round}.log"
        # shellcheck disable=SC2086
        step "JAX P=$p (CUDA_VISIBLE_DEVICES=$devs)" "$f" env CUDA_VISIBLE_DEVICES="$devs" "$py" \
          jobs/bench_jax_matmul.py --gpus "$p" --n "$n" --dtypes $dtypes --layouts $jax_layouts --warmup 1 \
          --repeat "$repeat" --json "$out/jax.jsonl" --tag "round$round"
        rc=$?
        if [ $rc -ne 0 ] && [ $rc -ne 3 ] && ! grep -q '^jax P=' "$f"; then
          log "JAX made no result: no more JAX steps"
          jax_ok=0
        fi
        grep '^jax P=' "$f" | sed 's/^/    /'
      fi
    done
  done
  log "all steps done"
fi

"${PYTHON:-python3}" - "$out" <<'PY' | tee "$out/table.md"
import json, os, sys
from statistics import median
out = sys.argv[1]
def lines(name):
    p = os.path.join(out, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []
cli, pyr, jx = lines("cli.jsonl"), lines("python.jsonl"), lines("jax.jsonl")
def groups(rows, key):
    g = {}
    for r in rows:
        g.setdefault(key(r), []).append(r)
    return g
clig = groups(cli, lambda r: (r["ranks"], r["dtype"], r["m"]))
pyg = groups(pyr, lambda r: (r["ranks"], r["dtype"], r["n"], r["layout"]))
jxg = groups(jx, lambda r: (r["ranks"], r["dtype"], r["n"], r["layout"]))
def med(rs):
    return median(r["time_median"] for r in rs) if rs else None
def fmt(t):
    return "-" if t is None else "%.4f" % t
print("\n| GPUs | dtype | n | layout (order) | grid | in place | moved max A/B/C per rank | CLI s | Python s | CLI / Python | target or layout price | JAX s | JAX / Python | rounds (Python/CLI/JAX) | check |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for key in sorted(pyg, key=lambda k: (k[0], k[1], k[2], ["blocks", "blocks-c", "rows", "rows-f"].index(k[3]))):
    p, dt, n, lay = key
    rs = pyg[key]
    r0 = rs[0]
    tp = med(rs)
    tc = med(clig.get((p, dt, n), []))
    base = "blocks" if lay.startswith("blocks") else "rows"
    tj = med(jxg.get((p, dt, n, base), []))
    ip = r0["in_place"]
    ips = "".join(x.upper() for x in "abc" if ip[x]) or "none"
    matching = all(ip.values())
    mv = r0["moved_max"]
    ratio = tc / tp if tc and tp else None
    if ratio is None:
        target = "-"
    elif matching:
        target = ">= 0.95: " + ("met" if ratio >= 0.95 else "NOT met")
    else:
        target = "%+.1f%% time over the CLI" % (100 * (tp / tc - 1))
    checks = [r.get("check") for r in rs]
    ck = "ok" if all(c and c["ok"] for c in checks) else ("not run" if not any(checks) else "FAILED")
    jr = "%.3f" % (tj / tp) if tj and tp else "-"
    nr = "%d/%d/%d" % (len(rs), len(clig.get((p, dt, n), [])), len(jxg.get((p, dt, n, base), [])))
    print("| %d | %s | %d | %s (%s) | %s | %s | %d/%d/%d | %s | %s | %s | %s | %s%s | %s | %s | %s |"
          % (p, dt, n, lay, r0["order"], r0["grid"], ips, mv["a"], mv["b"], mv["c"], fmt(tc), fmt(tp),
             "-" if ratio is None else "%.3f" % ratio, target, fmt(tj), "" if base == lay or tj is None else " (JAX %s)" % base,
             jr, nr, ck))
if jx:
    print("\n| GPUs | dtype | n | JAX layout | mesh | JAX s | collectives (compiled HLO) | check | distmm Python s, same layout | JAX / distmm |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(jxg):
        p, dt, n, lay = key
        rs = jxg[key]
        tj = med(rs)
        tp = med(pyg.get((p, dt, n, lay), []))
        checks = [r.get("check") for r in rs]
        ck = "ok" if all(c and c["ok"] for c in checks) else ("not run" if not any(checks) else "FAILED")
        print("| %d | %s | %d | %s %s | %s | %s | %s | %s | %s | %s |"
              % (p, dt, n, lay, rs[0]["spec"], rs[0]["grid"], fmt(tj), rs[0].get("collectives"), ck, fmt(tp),
                 "%.3f" % (tj / tp) if tj and tp else "-"))
if not pyr:
    print("\n(no Python results in %s)" % out)
PY
