#!/usr/bin/env bash
# distmm on the callers' own layouts (MultiplyPlan, issue 41 item 6) against ScaLAPACK's PDGEMM
# on the same arrays and against COSMA's ScaLAPACK drop-in, CPU ranks, f64, one thread per rank,
# one rank per core. For each P, shape and layout (A, B and C all in it), ROUNDS rounds; each
# round runs, in an order alternating from round to round:
#   - `distmm layout-bench`: one plan, then ours and PDGEMM in turn on the same local arrays,
#     --warmup 1 --repeat REPEAT, our C checked against PDGEMM's;
#   - COSMA's `pxgemm_miniapp --algorithm cosma` on the same layout (same blocks and grid),
#     -r 1+REPEAT, its first call dropped as the warm-up (COSMA keeps its buffers between calls).
# Then medians over every timed call of the rounds and a Markdown table (last on stdout, also
# OUT/table.md). Slabs are ScaLAPACK's: a P x 1 grid (row slabs), every dimension d in blocks of
# ceil(d / P).
#
#   jobs/bench_layouts.sh [DISTMM]         (default build/distmm)
#   jobs/bench_layouts.sh --table OUT/results.jsonl   # only print the table of earlier runs
#
# Environment:
#   PS="16 64"                rank counts
#   SHAPES="8192x8192x8192 4096x4096x65536"
#   LAYOUTS="block-cyclic:64 block-cyclic:256 row-slabs"   (col-slabs too; block-cyclic:NB)
#   ROUNDS=5  REPEAT=1        rounds, and timed calls per code and round
#   COSMA_DIR                 pxgemm_miniapp's folder (default .device/cosma when present, else
#                             ../shared/anchors/cosma beside the repository); NO_COSMA=1 skips it
#   OUT=docs/results/layouts_YYYYMMDD   raw output: each run's stdout, results.jsonl (appended
#                             to: a second job into the same OUT adds its rounds), table.md
#   MPIRUN=mpirun  MPI_ARGS="--bind-to core --map-by core"
#   SIZES_SMALL=1             a quick local smoke: P = 4, 512-sized shapes, ROUNDS=2, ranks not bound
#
# Words: "words moved" is the redistribution's elements sent between ranks, summed over ranks
# (A and B into the algorithm's layout, C back), apart from the algorithm's own words (in the
# JSON lines: algo_words_max, algo_words_total). "redistribution s" is the median of the busiest
# rank's redistribute-in plus redistribute-out seconds (distmm::MultiplyPlan::last_seconds).
set -uo pipefail
cd "$(dirname "$0")/.."

table() {
/usr/bin/env python3 - "$1" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cases, data = [], {}
for r in rows:
    key = (r["ranks"], r["m"], r["n"], r["k"], r["case"])
    if key not in cases: cases.append(key)
    data.setdefault(key, {}).setdefault(r["code"], []).append(r)
def med(rs, field):
    v = [t for r in rs for t in r.get(field, [])]
    return statistics.median(v) if v else None
def fmt(x, f="%.3f"): return "-" if x is None else f % x
def ratio(base, ours, target):
    if base is None or ours is None: return "-"
    x = base / ours
    return "%.2fx (%s)" % (x, "met" if x >= target else "not met")
print("| P | shape m x n x k | layout | algorithm | ours s | redistribution s | words moved | PDGEMM s | COSMA s | PDGEMM / ours (>= 1.5x) | COSMA / ours (>= 1.0x) | rounds |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for key in cases:
    p, m, n, k, case = key
    ours = data[key].get("distmm", [])
    cosma = data[key].get("cosma", [])
    t = med(ours, "times")
    tp = med(ours, "pdgemm_times")
    tc = med(cosma, "times")
    redist = statistics.median(r["redistribution_median"] for r in ours) if ours else None
    words = ours[-1]["moved_total"]["total"] if ours else None
    algo = ours[-1]["algo"] if ours else "-"
    print("| %d | %d x %d x %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |" % (
        p, m, n, k, case, algo, fmt(t), fmt(redist), fmt(words, "%.3g"), fmt(tp), fmt(tc),
        ratio(tp, t, 1.5), ratio(tc, t, 1.0), max(len(ours), len(cosma))))
failed = [r for rs in data.values() for r in rs.get("distmm", []) if not r["check"]["passed"]]
if failed: print("\nCHECK FAILED in %d runs (our C against PDGEMM's): see results.jsonl" % len(failed))
EOF
}
if [ "${1:-}" = --table ]; then table "$2"; exit; fi

distmm=${1:-build/distmm}
[ -x "$distmm" ] || { echo "no distmm binary at $distmm: build first (or pass its path)" >&2; exit 2; }
if [ -n "${SIZES_SMALL:-}" ]; then
  ps=${PS:-4} shapes=${SHAPES:-"512x512x512 256x256x4096"} rounds=${ROUNDS:-2}
  layouts=${LAYOUTS:-"block-cyclic:64 block-cyclic:128 row-slabs"}
  read -r -a mpiargs <<<"${MPI_ARGS:---oversubscribe --bind-to none}"
else
  ps=${PS:-16 64} shapes=${SHAPES:-"8192x8192x8192 4096x4096x65536"} rounds=${ROUNDS:-5}
  layouts=${LAYOUTS:-"block-cyclic:64 block-cyclic:256 row-slabs"}
  read -r -a mpiargs <<<"${MPI_ARGS:---bind-to core --map-by core}"
fi
repeat=${REPEAT:-1}
cosma_dir=${COSMA_DIR:-}
if [ -z "$cosma_dir" ]; then
  cosma_dir=../shared/anchors/cosma
  [ -x .device/cosma/pxgemm_miniapp ] && cosma_dir=.device/cosma
fi
miniapp=$cosma_dir/pxgemm_miniapp
if [ -z "${NO_COSMA:-}" ] && [ ! -x "$miniapp" ]; then
  echo "no pxgemm_miniapp in $cosma_dir: set COSMA_DIR, or NO_COSMA=1 to skip COSMA" >&2; exit 2
fi
out=${OUT:-docs/results/layouts_$(date +%Y%m%d)}
mkdir -p "$out" || exit 2
results=$out/results.jsonl
mpirun=${MPIRUN:-mpirun}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
start=$SECONDS
echo "results: $results; P in {$ps}, $rounds rounds, $repeat timed call(s) per code and round; COSMA: ${NO_COSMA:+skipped}${NO_COSMA:-$miniapp}" >&2

# The squarest R x C = P, R <= C (layout-bench's default grid).
squarest() {
  local p=$1 r=1 d
  for ((d = 1; d * d <= p; ++d)); do ((p % d == 0)) && r=$d; done
  echo "$r $((p / r))"
}

for p in $ps; do
  for shape in $shapes; do
    IFS=x read -r m n k <<<"$shape"
    for lay in $layouts; do
      kind=${lay%%:*} nb=
      [[ $lay == *:* ]] && nb=${lay#*:}
      if [ "$kind" = block-cyclic ]; then
        nb=${nb:-64}
        read -r gr gc < <(squarest "$p")
        case="block-cyclic nb $nb"
        ours=(--layout block-cyclic --nb "$nb" --grid "${gr}x${gc}")
        bm=$nb bn=$nb bk=$nb
      else
        [ "$kind" = row-slabs ] && gr=$p gc=1 || gr=1 gc=$p
        case=$kind
        ours=(--layout "$kind")
        bm=$(( (m + p - 1) / p )) bn=$(( (n + p - 1) / p )) bk=$(( (k + p - 1) / p ))
      fi
      tag=p${p}_${m}x${n}x${k}_${kind}${nb:+_nb$nb}
      echo "== P = $p, $m x $n x $k, $case (grid ${gr}x${gc})" >&2
      for r in $(seq "$rounds"); do
        codes=(distmm cosma)
        (( r % 2 == 0 )) && codes=(cosma distmm)
        for c in "${codes[@]}"; do
          if [ "$c" = distmm ]; then
            log=$out/${tag}_r${r}_distmm.txt
            "$mpirun" -n "$p" "${mpiargs[@]}" "$distmm" layout-bench --m "$m" --n "$n" --k "$k" --dtype f64 \
              "${ours[@]}" --warmup 1 --repeat "$repeat" >"$log" 2>&1
            line=$(sed -n 's/^layout-bench {/{/p' "$log" | tail -1)
            if [ -z "$line" ]; then echo "   round $r distmm failed:" >&2; grep -v pmix "$log" | tail -5 >&2; continue; fi
            python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r.update(code="distmm", case=sys.argv[2], round=int(sys.argv[3]))
print(json.dumps(r))
sys.stderr.write("   round %s distmm %.3f s (%s; redistribution %.3f s), pdgemm %s s, check %s\n" % (sys.argv[3],
  r["time_median"], r["algo"], r["redistribution_median"], "%.3f" % r["pdgemm_time_median"] if "pdgemm_time_median" in r else "-",
  "passed" if r["check"]["passed"] else "FAILED"))' "$line" "$case" "$r" >>"$results"
          elif [ -z "${NO_COSMA:-}" ]; then
            log=$out/${tag}_r${r}_cosma.txt
            "$mpirun" -n "$p" "${mpiargs[@]}" "$miniapp" -m "$m" -n "$n" -k "$k" --block_a "$bm,$bk" --block_b "$bk,$bn" \
              --block_c "$bm,$bn" -p "$gr,$gc" --algorithm cosma -r $((repeat + 1)) >"$log" 2>&1
            ms=$(sed -n 's/.*COSMA TIMES \[ms\] = *\(.*\)/\1/p' "$log" | head -1)
            if [ -z "$ms" ]; then echo "   round $r cosma failed:" >&2; grep -v pmix "$log" | tail -5 >&2; continue; fi
            python3 -c 'import json,statistics,sys; p,m,n,k,case,r=sys.argv[1:7]; t=[float(x)/1e3 for x in sys.argv[7].split()][1:]
print(json.dumps(dict(code="cosma", ranks=int(p), m=int(m), n=int(n), k=int(k), case=case, round=int(r),
  blocks=sys.argv[8], grid=sys.argv[9], time_median=statistics.median(t), times=t)))
sys.stderr.write("   round %s cosma %.3f s\n" % (r, statistics.median(t)))' \
              "$p" "$m" "$n" "$k" "$case" "$r" "$ms" "a $bm,$bk b $bk,$bn c $bm,$bn" "${gr}x${gc}" >>"$results"
          fi
        done
      done
    done
  done
done
echo "elapsed $((SECONDS - start)) s" >&2
table "$results" | tee "$out/table.md"
