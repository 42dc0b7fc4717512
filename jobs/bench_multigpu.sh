#!/usr/bin/env bash
# Device-resident distributed runs on the GPUs of one host, one job, table last.
#   jobs/bench_multigpu.sh ["f32 sizes"] ["f64 sizes"]            (MODE=gpus, the default)
#   MODE=scaling jobs/bench_multigpu.sh                            (4 and 8 GPUs)
# MODE=gpus (the GPU-resident multi-GPU issue's benchmark), for each dtype and size:
#   - `distmm gpu-bench` on one GPU (cuBLAS, and gpu-winograd at levels 1-4: its best row);
#   - `distmm run --algo $ALGO` on 1, 2, 4, 8 ranks (as many as there are GPUs; one GPU per
#     rank, NCCL between them) with cublas and gpu-winograd (levels auto), data on the GPUs;
#   - the same on all GPUs with --from-host and --algo $HOST_ALGO (inputs copied from host
#     memory, C copied back: load and store counted; streamed in panels, --stages auto) beside
#     cuBLASXt (`distmm xt-bench`) on all GPUs with the same host inputs in pinned memory.
# MODE=scaling (the 4- and 8-GPU issue's benchmark), on every rank count up to the GPUs:
#   - strong scaling: f32 n = 65536 and f64 n = 49152 (SCALING_F32, SCALING_F64), cublas and
#     gpu-winograd, with summa and cuboid (the best of the two per row: the best classical
#     algorithm), against gpu-bench on one GPU (--no-error: the f32 reference would not fit);
#   - CAPS with one BFS step on 7 ranks (when there are 7 or more GPUs), gpu-winograd leaves, f32
#     65536: effective TFLOP/s (2 n^3 / t) against 7 x one GPU's cuBLAS rate;
#   - weak scaling: each GPU's block of C and its flops fixed (m = n = 16384 sqrt(P), k =
#     16384, f64; WEAK_BLOCK), time per multiply from 1 to 8 GPUs.
# Efficiency = rate on N GPUs / (N x one-GPU gpu-bench rate of the same engine). Environment:
# DISTMM_BIN (default build/distmm), REPEAT (10, and always even: see below), ROUNDS (1: MODE=gpus runs each size's rows, gpu-bench
# and cuBLASXt included, this many times in turn; a table row is the median of its rounds'
# medians), ALGO (summa), HOST_ALGO (the --from-host rows' algorithm: auto), CAPS_STEPS (X: gpu-winograd on
# 2+ GPUs also as `--algo caps --caps-steps X --formula winograd`, Strassen's top level dealt
# over the GPUs; empty: not), BENCH_JSON (JSON lines, default a
# temporary file), MPIRUN (default: mpirun with root and oversubscription allowed), TABLE_ONLY=1
# (run nothing: print the tables of BENCH_JSON's lines).
# Through the device tool: build here into a folder, carry it and .device, and run
#   source .device/env.sh && DISTMM_BIN=.bin/distmm bash jobs/bench_multigpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
f32_sizes=${1:-"32768 49152"}
f64_sizes=${2:-"16384 32768"}
bin=${DISTMM_BIN:-build/distmm}
table_only=${TABLE_ONLY:-}
[ -z "$table_only" ] || [ -s "${BENCH_JSON:-}" ] || { echo "bench_multigpu.sh: TABLE_ONLY=1 needs BENCH_JSON=FILE (the JSON lines to tabulate)" >&2; exit 2; }
[ -n "$table_only" ] || [ -x "$bin" ] || bash jobs/build.sh -DDISTMM_CUDA=ON
# An even number of timed runs, ten by default. GPUs held at their 700 W power cap throttle in
# swings of about 1 s (docs/performance.md, session 21). f64 32768 on two GPUs takes about 0.5 s
# a run, so its runs go slow, fast, slow, ... from the first run after the warm-up. With an odd
# count the median is always a slow run; with an even count it lies between the two, at the
# rate the GPUs sustain (the mean of the runs, within 0.5%). One GPU's 1 s run spans a whole swing.
repeat=${REPEAT:-10}
repeat=$(( repeat + repeat % 2 ))
rounds=${ROUNDS:-1}  # MODE=gpus: each size's rows run this many times, interleaved
algo=${ALGO:-summa}
host_algo=${HOST_ALGO:-auto}  # --from-host rows: the default, chosen for the streamed stages' products
caps_steps=${CAPS_STEPS-X}  # gpu-winograd on 2+ GPUs also as CAPS (winograd) with these steps ("": not)
out=${BENCH_JSON:-$(mktemp --suffix=.jsonl)}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}  # NVLink multicast off (it misbehaves on these hosts)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=${MPIRUN:-"mpirun --oversubscribe --bind-to none"}
if [ -z "$table_only" ]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  [ "$gpus" -ge 1 ] || { echo "bench_multigpu.sh: no GPU visible (nvidia-smi -L)" >&2; exit 1; }
  ranks=""
  for p in 1 2 4 8; do [ "$p" -le "$gpus" ] && ranks="$ranks $p"; done
  echo "GPUs: $gpus; ranks:$ranks; algorithm: $algo (--from-host: $host_algo); JSON lines: $out"
  "$bin" info | grep -iE "nccl|gpu" || true
fi

quiet() { grep -v pmix || true; }
runs() {  # runs P ENGINE DTYPE ALGO [run options]: one distmm run, its JSON line appended
  local p=$1 e=$2 dt=$3 a=$4
  shift 4
  $mpirun -np "$p" "$bin" run --algo "$a" --engine "$e" --dtype "$dt" --warmup 1 --repeat "$repeat" \
    --quiet --json "$out" "$@" 2>&1 | quiet
}
mode=${MODE:-gpus}
if [ -n "$table_only" ]; then
  :  # the tables of the JSON lines already in BENCH_JSON (e.g. several jobs' lines joined)
elif [ "$mode" = gpus ]; then
  for dt in f32 f64; do
    sizes=$f32_sizes
    [ "$dt" = f64 ] && sizes=$f64_sizes
    for n in $sizes; do
     for round in $(seq "$rounds"); do  # interleaved: every row of this size once per round
      echo "$dt $n: round $round of $rounds"
      # (timings only: the f32 reference needs 3 n^2 doubles more on the GPU, 58 GB at 49152;
      # every distmm run below is verified)
      "$bin" gpu-bench --dtype "$dt" --sizes "$n" --engines gpu-winograd --levels 1 2 3 4 \
        --repeat "$repeat" --no-error --json "$out" 2>&1 | grep '^|' | quiet
      for p in $ranks; do
        for e in cublas gpu-winograd; do runs "$p" "$e" "$dt" "$algo" --size "$n"; done
        # Strassen's top levels dealt across the GPUs (CAPS dealt steps): whole subproblems per GPU
        if [ "$p" -ge 2 ] && [ -n "$caps_steps" ]; then
          runs "$p" gpu-winograd "$dt" caps --caps-steps "$caps_steps" --formula winograd --size "$n"
        fi
      done
      for e in cublas gpu-winograd; do runs "$gpus" "$e" "$dt" "$host_algo" --size "$n" --from-host; done
      if [ "$gpus" -ge 2 ] && [ -n "$caps_steps" ]; then
        runs "$gpus" gpu-winograd "$dt" caps --caps-steps "$caps_steps" --formula winograd --size "$n" --from-host
      fi
      "$bin" xt-bench --dtype "$dt" --sizes "$n" --gpus "$gpus" --repeat "$repeat" --json "$out" 2>&1 | grep '^|' | quiet
     done
    done
  done
else
  for spec in "f32 ${SCALING_F32:-65536}" "f64 ${SCALING_F64:-49152}"; do
    read -r dt n <<< "$spec"
    "$bin" gpu-bench --dtype "$dt" --sizes "$n" --engines gpu-winograd --levels 1 2 3 4 --no-error \
      --repeat "$repeat" --json "$out" 2>&1 | grep '^|' | quiet
    for p in $ranks; do
      for e in cublas gpu-winograd; do
        for a in summa cuboid; do runs "$p" "$e" "$dt" "$a" --size "$n"; done
      done
    done
  done
  if [ "$gpus" -ge 7 ]; then
    runs 7 gpu-winograd f32 caps --size "${SCALING_F32:-65536}" --caps-steps B --formula winograd
  fi
  block=${WEAK_BLOCK:-16384}
  for p in $ranks; do
    mn=$(python3 -c "import math; print(int(round($block * math.sqrt($p))))")
    for e in cublas gpu-winograd; do runs "$p" "$e" f64 summa --m "$mn" --n "$mn" --k "$block"; done
  done
fi

python3 - "$out" <<'PY'
import json, sys
from statistics import median
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def algo_of(r):  # "summa", or "caps XX" with the CAPS steps that ran
    if r["algo"] != "caps":
        return r["algo"]
    lay = r.get("layout", "")
    return "caps " + (lay.split("steps ")[1].split(",")[0] if "steps " in lay else "")
# Rows of one configuration from several rounds (ROUNDS, or jobs' lines joined) become one: the
# median of their medians (load and store likewise), with the number of rounds.
def merged(group):
    r = dict(group[0])
    for f in ("time_median", "load_seconds", "store_seconds"):
        if f in r:
            r[f] = median(g[f] for g in group)
    r["rounds"] = len(group)
    r["all_times"] = [t for g in group for t in g.get("times", [])]  # every round's runs, for the spread
    return r
def grouped(items, key):
    by = {}
    for r in items:
        by.setdefault(key(r), []).append(r)
    return {k: merged(g) for k, g in by.items()}
gb = grouped((r for r in rows if r.get("command") == "gpu-bench"),
             lambda r: (r["dtype"], r["n"], r["engine"], r.get("levels")))
bench = {}  # (dtype, n, engine) -> one-GPU gpu-bench seconds (gpu-winograd: its best level)
for (dt, n, e, _), r in gb.items():
    bench[(dt, n, e)] = min(bench.get((dt, n, e), 1e30), r["time_median"])
runs = list(grouped((r for r in rows if "algo" in r),
                    lambda r: (r["dtype"], r["m"], r["n"], r["k"], r["engine"], r["ranks"], algo_of(r),
                               bool(r.get("from_host")), r.get("layout", ""))).values())
xt = {(k[0], k[1]): r for k, r in grouped((r for r in rows if r.get("command") == "xt-bench"),
                                         lambda r: (r["dtype"], r["n"])).items()}
rounds = max([r["rounds"] for r in runs] + [1])
if rounds > 1:
    print(f"\n(each row: the median of up to {rounds} rounds' medians; its runs and their spread pool the rounds)")
print("\n| dtype | n | engine | GPUs (ranks) | algorithm | residency | time s | runs, fastest-slowest s | TFLOP/s | vs one-GPU gpu-bench | efficiency | target |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in sorted((r for r in runs if not r.get("from_host")), key=lambda r: (r["dtype"], r["m"], r["engine"], r["ranks"], r["algo"])):
    k = (r["dtype"], r["m"], r["engine"])
    t, p = r["time_median"], r["ranks"]
    tflops = 2 * r["m"] * r["n"] * r["k"] / t / 1e12
    ref = bench.get(k)
    speed = ref / t if ref else float("nan")  # rate over one GPU's rate
    eff = speed / p
    target = ""
    if p == 1:
        target = ">= 0.97x: " + ("met" if speed >= 0.97 else "NOT met")
    elif p == 2 and ((r["dtype"] == "f32" and r["m"] >= 32768) or (r["dtype"] == "f64" and r["m"] == 32768)):
        target = ">= 1.85x one GPU: " + ("met" if speed >= 1.85 else "NOT met")
    if not ref and target:
        target = "no one-GPU gpu-bench of this size and engine"
    # "device (...; between GPUs: NCCL 2.28.3 (path))" -> "device, NCCL"; one rank: "device"; the
    # fallback without NCCL: "device, MPI via host"
    full = r.get("residency", "")
    res = ("device, NCCL" if "NCCL" in full else "device" if "none (one rank)" in full
           else "device, MPI via host" if full.startswith("device") and "MPI" in full else full[:40])
    ts = r["all_times"]
    spread = f"{len(ts)}, {min(ts):.3f}-{max(ts):.3f}" if ts else "-"
    print(f"| {r['dtype']} | {r['m']} | {r['engine']} | {p} | {algo_of(r)} | {res} | {t:.3f} | {spread} | {tflops:.1f} | {speed:.3f}x | {eff:.3f} | {target} |")
print("\n| dtype | n | engine | GPUs | algorithm | load s | multiply s | store s | host to host s | cuBLASXt s | speedup over cuBLASXt | target |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in sorted((r for r in runs if r.get("from_host")), key=lambda r: (r["dtype"], r["m"], r["engine"], r["algo"])):
    # streamed runs (stages > 1) time host to host; unstreamed ones load, multiply, store in turn
    total = r["time_median"] if r.get("stages", 1) > 1 else r["load_seconds"] + r["time_median"] + r["store_seconds"]
    x = xt.get((r["dtype"], r["m"]))
    xs = x["time_median"] if x else float("nan")
    sp = xs / total
    target = ">= 1.2x: " + ("met" if sp >= 1.2 else "NOT met") if r["ranks"] >= 2 else ""
    if r.get("stages", 1) > 1:
        parts = f"streamed in {r['stages']} panels | - | -"
    else:
        parts = f"{r['load_seconds']:.3f} | {r['time_median']:.3f} | {r['store_seconds']:.3f}"
    print(f"| {r['dtype']} | {r['m']} | {r['engine']} | {r['ranks']} | {algo_of(r)} | {parts} | {total:.3f} | {xs:.3f} | {sp:.3f}x | {target} |")
# Scaling mode: the best classical algorithm per (dtype, n, engine, ranks), CAPS, weak scaling.
square = [r for r in runs if not r.get("from_host") and r["m"] == r["n"] == r["k"] and r["algo"] in ("summa", "cuboid")]
best = {}
for r in square:
    key = (r["dtype"], r["m"], r["engine"], r["ranks"])
    if key not in best or r["time_median"] < best[key]["time_median"]:
        best[key] = r
if any(k[3] >= 4 for k in best):
    print("\n| dtype | n | engine | GPUs | best classical | time s | efficiency | target |")
    print("|---|---|---|---|---|---|---|---|")
    for (dt, n, e, p), r in sorted(best.items()):
        ref = bench.get((dt, n, e))
        eff = ref / r["time_median"] / p if ref else float("nan")
        t = {4: 0.90, 8: 0.85}.get(p)
        mark = f">= {t}: " + ("met" if eff >= t else "NOT met") if t else ""
        print(f"| {dt} | {n} | {e} | {p} | {r['algo']} | {r['time_median']:.3f} | {eff:.3f} | {mark} |")
for r in (r for r in runs if r["algo"] == "caps" and r["ranks"] == 7):
    cub = bench.get((r["dtype"], r["m"], "cublas"))
    eff_tf = 2 * r["m"] ** 3 / r["time_median"] / 1e12
    need = 1.3 * 7 * (2 * r["m"] ** 3 / cub / 1e12) if cub else float("nan")
    print(f"\nCAPS on {r['ranks']} GPUs ({r['residency']}): {r['time_median']:.3f} s, {eff_tf:.1f} effective TFLOP/s; "
          f"target 1.3 x 7 x one GPU's cuBLAS = {need:.1f}: " + ("met" if eff_tf >= need else "NOT met"))
import os
wb = int(os.environ.get("WEAK_BLOCK", "16384"))
weak = sorted((r for r in runs if os.environ.get("MODE") == "scaling" and r["k"] == wb and r["m"] == r["n"]
               and r["dtype"] == "f64" and r["algo"] == "summa"), key=lambda r: (r["engine"], r["ranks"]))
if weak:
    print("\n| engine | GPUs | m = n | k | time s | vs 1 GPU |")
    print("|---|---|---|---|---|---|")
    one = {r["engine"]: r["time_median"] for r in weak if r["ranks"] == 1}
    for r in weak:
        base = one.get(r["engine"])
        print(f"| {r['engine']} | {r['ranks']} | {r['m']} | {r['k']} | {r['time_median']:.3f} | "
              f"{(r['time_median'] / base if base else float('nan')):.3f} |")
PY
