#!/usr/bin/env bash
# distmm's communication-optimal algorithms against COSMA and ScaLAPACK, side by side in one job:
# for each shape, REPS rounds that run every code once (round-robin, the order rotated each round,
# one timed multiplication per process for every code: distmm --repeat 1 --warmup 0,
# cosma_miniapp -r 1), then medians, words per rank and a Markdown table.
#
#   jobs/bench_cosma.sh DISTMM COSMA_MINIAPP COSMA_STATISTICS SHAPE...
#   SHAPE = MxNxK@P, e.g. 16384x16384x16384@16 4096x4096x65536@16 8192x8192x8192@13 (@P: default $NP or 16)
#   jobs/bench_cosma.sh --table RESULTS.jsonl      # only print the table of earlier runs
#
# Environment:
#   REPS=5                               rounds per shape
#   CODES="cuboid auto scalapack cosma"  distmm --algo values, and "cosma" for cosma_miniapp
#   RESULTS=FILE                         JSON lines to append to (default: a temporary file); every
#                                        distmm line is distmm's --json line plus "code" and "round";
#                                        COSMA's: code, m, n, k, ranks, round, time_median,
#                                        words_max (cosma_statistics: GB * 1e9 / 8), strategy
#   MPIRUN=mpirun  MPI_ARGS="--oversubscribe"
#   DISTMM_MACHINE_FILE                  the `distmm calibrate` file for --algo auto (passed through)
#   BUDGET_S                             stop starting rounds once the next would end past this many
#                                        seconds (estimated from the last round); unset: no limit
#
# Words: distmm's words_max is measured (elements sent by the busiest rank) and lower_bound_words
# its printed bound for the shape; COSMA's is cosma_statistics' "Total communication volume per rank"
# (bytes of doubles, 10^9 per GB) over 8, as COSMA counts it. The COSMA row's bound is distmm's.
# distmm's scalapack path does not count its words: its row shows distmm's analytic figure.
set -uo pipefail
table() {
/usr/bin/env python3 - "$1" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
shapes, data = [], {}
for r in rows:
    key = (r["m"], r["n"], r["k"], r["ranks"])
    if key not in shapes: shapes.append(key)
    data.setdefault(key, {}).setdefault(r["code"], []).append(r)
def fmt(x, f="%.3g"): return "-" if x is None else f % x
print("| shape m x n x k | P | code | median s | GFLOP/s | words/rank max | lower bound | words/bound | speedup vs ScaLAPACK | time vs COSMA | runs | plan |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for key in shapes:
    m, n, k, p = key
    codes = data[key]
    bound = next((r["lower_bound_words"] for c in codes.values() for r in c if "lower_bound_words" in r), None)
    med = {c: statistics.median(r["time_median"] for r in rs) for c, rs in codes.items()}
    for c, rs in codes.items():
        t = med[c]
        measured = all(r.get("words_measured", True) for r in rs)
        wk = "words_max" if measured else "analytic_words_max"
        words = max(r[wk] for r in rs) if all(r.get(wk) is not None for r in rs) else None
        plan = rs[-1].get("strategy") if c == "cosma" else (rs[-1].get("layout", "") if c != "auto"
               else "%s: %s" % (rs[-1].get("algo", "?"), rs[-1].get("layout", "")))
        print("| %d x %d x %d | %d | %s | %.3f | %.1f | %s | %s | %s | %s | %s | %d | %s |" % (
            m, n, k, p, c, t, 2.0 * m * n * k / t / 1e9, fmt(words) + ("" if measured else " (analytic)"), fmt(bound),
            fmt(words / bound if words and bound else None, "%.2f"),
            fmt(med["scalapack"] / t if "scalapack" in med else None, "%.2fx"),
            fmt(t / med["cosma"] if "cosma" in med else None, "%.2fx"), len(rs), plan))
sel = [(key, data[key]["auto"][-1].get("selection", "")) for key in shapes if "auto" in data[key]]
if sel: print("\n--algo auto's choices:")
for (m, n, k, p), s in sel: print("- %d x %d x %d, P = %d: %s" % (m, n, k, p, s))
EOF
}
if [ "${1:-}" = --table ]; then table "$2"; exit; fi
[ $# -ge 4 ] || { sed -n '2,13p' "$0"; exit 2; }
distmm=$1 miniapp=$2 stats=$3; shift 3
reps=${REPS:-5} codes=(${CODES:-cuboid auto scalapack cosma})
mpirun=${MPIRUN:-mpirun}; read -r -a mpiargs <<<"${MPI_ARGS:---oversubscribe}"
results=${RESULTS:-$(mktemp --suffix=.jsonl)}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d); start=$SECONDS
echo "results: $results; ${#codes[@]} codes x $reps rounds per shape; model: ${DISTMM_MACHINE_FILE:-none}" >&2
for shape in "$@"; do
  dims=${shape%@*} p=${NP:-16}; [ "$dims" != "$shape" ] && p=${shape#*@}
  IFS=x read -r m n k <<<"$dims"
  # COSMA's decomposition and words per rank (a dry run, nothing computed)
  "$stats" -m "$m" -n "$n" -k "$k" -P "$p" >"$tmp/stats" 2>&1
  gb=$(sed -n 's/.*Total communication volume per rank in \[GB\]: *\([0-9.eE+-]*\).*/\1/p' "$tmp/stats" | head -1)
  strat=$(sed -n '/Divisions strategy/,/Required memory/p' "$tmp/stats" | sed '1d;$d' | paste -sd ';' -)
  echo "== $m x $n x $k, P = $p: COSMA plans '${strat}', ${gb:-?} GB per rank" >&2
  for r in $(seq "$reps"); do
    if [ -n "${BUDGET_S:-}" ] && [ -n "${last:-}" ] && (( SECONDS - start + last > BUDGET_S )); then
      echo "   budget: round $r and later of this shape not run" >&2; break
    fi
    t0=$SECONDS
    for i in $(seq 0 $((${#codes[@]} - 1))); do
      c=${codes[$(( (i + r - 1) % ${#codes[@]} ))]}
      if [ "$c" = cosma ]; then
        "$mpirun" -n "$p" "${mpiargs[@]}" "$miniapp" -m "$m" -n "$n" -k "$k" -r 1 >"$tmp/out" 2>&1
        ms=$(sed -n 's/.*COSMA TIMES \[ms\] = *\([0-9.]*\).*/\1/p' "$tmp/out" | head -1)
        if [ -z "$ms" ]; then echo "   cosma failed:" >&2; grep -v pmix "$tmp/out" | tail -5 >&2; continue; fi
        python3 -c 'import json,sys; m,n,k,p,r,ms,gb,st=sys.argv[1:]
print(json.dumps(dict(code="cosma", m=int(m), n=int(n), k=int(k), ranks=int(p), round=int(r),
  time_median=float(ms)/1e3, words_max=float(gb)*1e9/8 if gb else None, strategy=st)))' \
          "$m" "$n" "$k" "$p" "$r" "$ms" "$gb" "$strat" >>"$results"
        echo "   round $r cosma $(python3 -c "print($ms/1e3)") s" >&2
      else
        rm -f "$tmp/j"
        "$mpirun" -n "$p" "${mpiargs[@]}" "$distmm" run --m "$m" --n "$n" --k "$k" --algo "$c" --dtype f64 \
          --threads 1 --repeat 1 --warmup 0 --verify none --quiet --json "$tmp/j" >"$tmp/out" 2>&1
        if [ ! -s "$tmp/j" ]; then echo "   distmm $c failed:" >&2; grep -v pmix "$tmp/out" | tail -5 >&2; continue; fi
        python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).read().splitlines()[-1])
r["code"]=sys.argv[2]; r["round"]=int(sys.argv[3]); print(json.dumps(r))
sys.stderr.write("   round %s %s %.3f s (%s %s)\n" % (sys.argv[3], sys.argv[2], r["time_median"], r["algo"], r["layout"]))' \
          "$tmp/j" "$c" "$r" >>"$results"
      fi
    done
    last=$(( SECONDS - t0 ))
  done
done
rm -rf "$tmp"
echo "elapsed $((SECONDS - start)) s" >&2
table "$results"
