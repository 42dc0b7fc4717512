#!/usr/bin/env bash
# Host-resident products (inputs and C in host memory, the copies counted) on all the GPUs of one
# host, beside cuBLASXt on the same GPUs, one job, runs interleaved, table last:
#   jobs/bench_host_resident.sh ["f32:32768 f32:49152 f64:16384 f64:32768"]
# For each dtype:size, ROUNDS (default 2) rounds of
#   - distmm run --from-host                 streamed in panels (--stages auto), host to host;
#   - distmm run --from-host --stages 1      load, multiply and store one after the other;
#   - distmm xt-bench                        cuBLASXt (pinned host matrices, its best block dim);
# each distmm run --warmup 1 --repeat REPEAT (default 5), ENGINES (default "gpu-winograd cublas"),
# ALGO (default summa), RUN_ARGS (more distmm run options for every run), STAGES (extra --stages
# counts to try, default none); or CONFIGS, a list of ALGO[/CUBOID_GRID]@STAGES run instead of
# ALGO's auto, 1 and STAGES, e.g. CONFIGS="cuboid/1x1x2@2x2 summa@2x1 summa@2x2" (STAGES+whole: with
# --whole-first-stage, e.g. summa@2x1+whole beside summa@2x1, whose first product begins on the
# first part of k). The table gives
# medians over the rounds of each run's median, host to host, and cuBLASXt's time over ours.
# Environment: DISTMM_BIN (default build/distmm), BENCH_JSON (JSON lines, default a temporary
# file), MPIRUN, TABLE_ONLY=1 (print the table of BENCH_JSON's lines). Through the device tool:
#   source .device/env.sh && DISTMM_BIN=build-dev/distmm bash jobs/bench_host_resident.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-"f32:32768 f32:49152 f64:16384 f64:32768"}
bin=${DISTMM_BIN:-build/distmm}
out=${BENCH_JSON:-$(mktemp --suffix=.jsonl)}
rounds=${ROUNDS:-2}
repeat=${REPEAT:-5}
engines=${ENGINES:-"gpu-winograd cublas"}
algo=${ALGO:-summa}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=${MPIRUN:-"mpirun --oversubscribe --bind-to none"}
if [ -z "${TABLE_ONLY:-}" ]; then
  [ -x "$bin" ] || bash jobs/build.sh -DDISTMM_CUDA=ON
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  [ "$gpus" -ge 1 ] || { echo "bench_host_resident.sh: no GPU visible (nvidia-smi -L)" >&2; exit 1; }
  configs=${CONFIGS:-}
  if [ -z "$configs" ]; then
    for st in auto 1 ${STAGES:-}; do configs+=" $algo@$st"; done
  fi
  echo "GPUs: $gpus; runs: $configs; engines: $engines; JSON lines: $out"
  quiet() { grep -v pmix || true; }
  for c in $cases; do
    dt=${c%%:*} n=${c##*:}
    for round in $(seq "$rounds"); do
      for e in $engines; do
        for cfg in $configs; do
          a=${cfg%%@*} st=${cfg##*@} opt=()
          case $st in *+whole) opt=(--whole-first-stage) st=${st%+whole} ;; esac
          [ "$st" = auto ] || opt+=(--stages "$st")
          case $a in */*) opt+=(--cuboid-grid "${a#*/}") a=${a%%/*} ;; esac
          $mpirun -np "$gpus" "$bin" run --algo "$a" --engine "$e" --dtype "$dt" --size "$n" --from-host \
            "${opt[@]}" ${RUN_ARGS:-} --warmup 1 --repeat "$repeat" --quiet --json "$out" 2>&1 | quiet
        done
      done
      "$bin" xt-bench --dtype "$dt" --sizes "$n" --gpus "$gpus" --repeat "$repeat" --json "$out" 2>&1 | grep '^|' | quiet
    done
  done
fi
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
xt, ours = {}, {}
for r in rows:
    if r.get("command") == "xt-bench":
        xt.setdefault((r["dtype"], r["n"]), []).append(r["time_median"])
    elif r.get("from_host"):
        st = r.get("stages", 1)
        total = r["time_median"] if st > 1 else r["load_seconds"] + r["time_median"] + r["store_seconds"]
        # what the products did not hide: the first stage's inputs and the last stage's C when
        # streamed, the whole load and store when not
        wait = (r.get("exposed_load_seconds", 0), r.get("exposed_store_seconds", 0)) if st > 1 else \
            (r["load_seconds"], r["store_seconds"])
        algo = r["algo"] + (" " + r["layout"].split()[0] if r["algo"] == "cuboid" else "")
        grid = r.get("stage_grid", f"{st}x1") + (", first k-split" if r.get("first_stage_split") else "")
        key = (r["dtype"], r["m"], r["engine"], algo, r["ranks"], grid)
        ours.setdefault(key, []).append((total, wait, r.get("engine_levels_run", 0)))
print("\n| dtype | n | engine | algorithm | GPUs | stages (m x n panels) | levels | host to host s (runs) | not overlapped: load / store s | cuBLASXt s | cuBLASXt / ours |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for key in sorted(ours):
    dt, n, e, a, p, st = key
    t = statistics.median(v[0] for v in ours[key])
    ld = statistics.median(v[1][0] for v in ours[key])
    sd = statistics.median(v[1][1] for v in ours[key])
    x = statistics.median(xt[(dt, n)]) if (dt, n) in xt else float("nan")
    runs = ", ".join(f"{v[0]:.3f}" for v in ours[key])
    print(f"| {dt} | {n} | {e} | {a} | {p} | {st} | {ours[key][-1][2]} | {t:.3f} ({runs}) | {ld:.3f} / {sd:.3f} | {x:.3f} | {x / t:.3f}x |")
PY
