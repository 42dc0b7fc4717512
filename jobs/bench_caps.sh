#!/usr/bin/env bash
# CAPS against the classical algorithms on one host, codes interleaved (issue 19's benchmark):
#   jobs/bench_caps.sh "P:THREADS ..." "SIZES" [ROUNDS]
# e.g. on the 32-core host:  jobs/bench_caps.sh "7:4 28:1" "16384" 5
# For each P (ranks x threads per rank) `distmm calibrate` first (CAPS's step and formula
# choices and --algo auto read that model), then ROUNDS rounds; each round runs every code once
# per size, a fresh process each (one warm-up, one timed run), in an order rotated per round:
# caps (steps by the model, strassen), caps (winograd), summa, cuboid, auto. Prints per (P, n)
# each code's median time, CAPS over the best classical code, words per rank, and CAPS's phases
# (median over rounds of each phase's slowest rank). Table last.
# Environment: DISTMM_BIN (build/distmm), BENCH_JSON (JSON lines; a temporary file otherwise),
# DISTMM_MACHINE_FILE (where calibrate writes; a temporary file otherwise), CODES (the codes,
# ';'-separated `--algo` values with their options), SINGLE_COPY (e.g. cma: Open MPI's
# single-copy transport on a node, for every code, where the environment turned it off, as the
# GPU machine's image does; see the README), WARMUP (untimed multiplies before the timed one in
# each process, default 1; 0 halves the time of a round at n = 32768, every code then paying its
# first touch of fresh buffers alike), FIRST_ROUND (the first round's number, default 0: a job
# split over several commands continues the rotation), CALIBRATE=0 (keep DISTMM_MACHINE_FILE as
# an earlier part of the job wrote it), TABLE_ONLY=1 (run nothing: the table of BENCH_JSON).
# Through the device tool: carry .device and a CPU build, start with `source .device/env.sh &&`.
# Budget: a 32-core host multiplies n = 16384 in ~9-12 s per code, n = 32768 in ~70-90 s, so
# 5 rounds of 5 codes at 32768 on two rank counts take over an hour: split them over jobs, e.g.
# one rank count per session: SINGLE_COPY=cma WARMUP=0 CODES="caps;cuboid;summa" ... "7:4" 32768 5.
# CAPS's dealt steps (any P; at P = 28 the only way to three Strassen levels):
#   CODES="caps --caps-steps XXX;cuboid;summa" bash jobs/bench_caps.sh "28:1" 32768 5
set -euo pipefail
cd "$(dirname "$0")/.."
configs=${1:-"7:1"}
sizes=${2:-"1024"}
rounds=${3:-5}
bin=${DISTMM_BIN:-build/distmm}
out=${BENCH_JSON:-$(mktemp --suffix=.jsonl)}
first=${FIRST_ROUND:-0}
[ -z "${TABLE_ONLY:-}" ] || { [ -s "$out" ] || { echo "bench_caps.sh: TABLE_ONLY=1 needs BENCH_JSON=FILE (the JSON lines to tabulate)" >&2; exit 2; }; configs=""; }
export DISTMM_MACHINE_FILE=${DISTMM_MACHINE_FILE:-$(mktemp --suffix=.json)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -z "${SINGLE_COPY:-}" ] || export OMPI_MCA_btl_vader_single_copy_mechanism=$SINGLE_COPY
IFS=';' read -ra codes <<< "${CODES:-caps --formula strassen;caps --formula winograd;summa;cuboid;auto}"
for cfg in $configs; do
  np=${cfg%%:*} threads=${cfg#*:}
  [ "${CALIBRATE:-1}" = 0 ] ||
    mpirun -n "$np" --oversubscribe ${MPIRUN_ARGS:-} "$bin" calibrate --threads "$threads" --file "$DISTMM_MACHINE_FILE"
  for n in $sizes; do
    for ((r = first; r < first + rounds; ++r)); do
      for ((i = 0; i < ${#codes[@]}; ++i)); do
        code=${codes[$(( (i + r) % ${#codes[@]} ))]}
        # shellcheck disable=SC2086
        mpirun -n "$np" --oversubscribe ${MPIRUN_ARGS:-} "$bin" run --size "$n" --dtype f64 --threads "$threads" \
          --repeat 1 --warmup "${WARMUP:-1}" --verify freivalds --quiet --json "$out" --algo $code
      done
    done
  done
done
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
from collections import defaultdict
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def label(r):
    if r["algo"] == "caps":
        return "caps " + r["layout"].split("steps ")[1].split(",")[0] + " " + r["layout"].split(", ")[2]
    return r["algo"]
groups = defaultdict(lambda: defaultdict(list))
for r in rows:
    groups[(r["ranks"], r["threads"], r["m"])][label(r) if r.get("selection", "").find("auto") != 0 else "auto: " + label(r)].append(r)
for (P, threads, n), codes in sorted(groups.items()):
    med = {c: statistics.median(x["time_median"] for x in v) for c, v in codes.items()}
    classical = [t for c, t in med.items() if not c.startswith("caps") and not c.startswith("auto")]
    best = min(classical) if classical else None
    print(f"\n### P = {P} ({threads} threads per rank), n = {n}, {len(next(iter(codes.values())))} rounds\n")
    print("| code | median s | GFLOP/s | vs best classical | words/rank max | all verified |")
    print("|---|---|---|---|---|---|")
    for c, v in sorted(codes.items(), key=lambda kv: med[kv[0]]):
        g = 2.0 * n ** 3 / med[c] / 1e9
        ratio = f"{best / med[c]:.3f}x" if best else "-"
        print(f"| {c} | {med[c]:.3f} | {g:.1f} | {ratio} | {v[0]['words_max']:.3g} | {all(x['passed'] for x in v)} |")
    for c, v in codes.items():
        if not c.startswith("caps"):
            continue
        print(f"\n{c}: phases (median over rounds of the slowest rank), seconds")
        names = sorted({k for x in v for k in x.get("phases", {})})
        for k in names:
            t = statistics.median(x["phases"][k]["max"] for x in v if k in x.get("phases", {}))
            if t > 0:
                print(f"  {k:<45} {t:.3f}")
PY
