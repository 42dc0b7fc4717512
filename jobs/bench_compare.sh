#!/usr/bin/env bash
# Two builds of distmm side by side (e.g. main before and after a change), interleaved in one
# job so that drift hits both alike: the distributed algorithms at P ranks and the node engines,
# ROUNDS rounds each alternating the binaries, medians, after/before time ratios.
#   jobs/bench_compare.sh BEFORE_BIN AFTER_BIN [P] [N] [ROUNDS]
# e.g. jobs/bench_compare.sh /tmp/distmm-main build/distmm 4 4096 5
set -euo pipefail
cd "$(dirname "$0")/.."
before=$1 after=$2 np=${3:-4} n=${4:-4096} rounds=${5:-5}
algos=${ALGOS:-"summa cannon scalapack"}
engines=${ENGINES:-"blas strassen:1 strassen-lowmem:1 winograd:1"}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
out=$(mktemp -d)
for r in $(seq "$rounds"); do
  for which in before after; do
    bin=$before; [ "$which" = after ] && bin=$after
    for a in $algos; do
      mpirun -n "$np" --oversubscribe "$bin" run --size "$n" --algo "$a" --dtype f64 --threads 1 \
        --repeat 1 --warmup 0 --verify none --quiet --json "$out/dist_$which.jsonl"
    done
    for spec in $engines; do
      e=${spec%%:*} extra=()
      [ "$spec" != "$e" ] && extra=(--levels "${spec#*:}")
      OMP_NUM_THREADS=$(nproc) OPENBLAS_NUM_THREADS=$(nproc) "$bin" run --size "$n" --engine "$e" "${extra[@]}" \
        --dtype f64 --repeat 1 --warmup 0 --verify none --quiet --json "$out/eng_$which.jsonl"
    done
  done
done
/usr/bin/python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(p):
    rows = {}
    for line in open(p):
        r = json.loads(line)
        key = r["algo"] if "dist" in p else r["engine"]
        rows.setdefault(key, []).append(r["time_median"])
    return rows
for kind, title in (("dist", "distributed algorithms"), ("eng", "node engines (one process, all cores)")):
    b, a = load(f"{out}/{kind}_before.jsonl"), load(f"{out}/{kind}_after.jsonl")
    print(f"\n{title}: median of {rounds} interleaved rounds")
    print("| case | before s | after s | after / before |")
    print("|---|---|---|---|")
    for key in b:
        mb, ma = statistics.median(b[key]), statistics.median(a.get(key, [float("nan")]))
        print(f"| {key} | {mb:.3f} | {ma:.3f} | {ma / mb:.3f} |")
EOF
