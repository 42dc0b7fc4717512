#!/usr/bin/env bash
# CAPS's dealt steps on the GPUs of one host against SUMMA and one GPU, interleaved, one job:
#   jobs/bench_caps_gpus.sh ["f32:32768 f64:32768 ..."]
# For each dtype:size: `distmm gpu-bench` on one GPU (gpu-winograd, levels 3 and 4: the best is
# the reference), then ROUNDS (2) rounds of `distmm run` on all GPUs (one rank each, NCCL) with
# gpu-winograd, alternating CODES (default: caps X, summa, caps XX; winograd formula), then
# gpu-bench again. Medians of REPEAT (5) timed runs after a warm-up; the GPU tests first when
# TESTS=1. Environment: DISTMM_BIN (build/distmm), DISTMM_TESTS_BIN (build/tests/distmm_mpi_tests),
# BENCH_JSON (JSON lines; default a temporary file), MPIRUN. Through the device tool: carry .device
# and the build folder, and begin with `source .device/env.sh &&`.
set -euo pipefail
cd "$(dirname "$0")/.."
specs=${1:-"f32:32768 f64:32768"}
bin=${DISTMM_BIN:-build/distmm}
tests=${DISTMM_TESTS_BIN:-build/tests/distmm_mpi_tests}
repeat=${REPEAT:-5}
rounds=${ROUNDS:-2}
out=${BENCH_JSON:-$(mktemp --suffix=.jsonl)}
IFS=';' read -r -a codes <<< "${CODES:-caps --caps-steps X --formula winograd;summa;caps --caps-steps XX --formula winograd}"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=${MPIRUN:-"mpirun --oversubscribe --bind-to none"}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "$gpus" -ge 2 ] || { echo "bench_caps_gpus.sh: needs 2 or more GPUs (nvidia-smi -L shows ${gpus:-0})" >&2; exit 1; }
echo "GPUs: $gpus; JSON lines: $out"
quiet() { grep -v pmix || true; }
if [ "${TESTS:-0}" = 1 ]; then
  for p in 1 2 3; do
    echo "tests P=$p"
    $mpirun -np "$p" "$tests" --gtest_filter='DeviceRun*' 2>&1 | quiet | grep -E "PASSED|FAILED|Failure" || true
  done
fi
for spec in $specs; do
  dt=${spec%%:*} n=${spec##*:}
  bench() { "$bin" gpu-bench --dtype "$dt" --sizes "$n" --engines gpu-winograd --levels 3 4 --repeat "$repeat" \
              --no-error --json "$out" 2>&1 | quiet | grep '^| [0-9]' || true; }
  bench
  for ((r = 0; r < rounds; ++r)); do
    for code in "${codes[@]}"; do
      # shellcheck disable=SC2086  # the code's words are options
      $mpirun -np "$gpus" "$bin" run --engine gpu-winograd --dtype "$dt" --size "$n" --warmup 1 --repeat "$repeat" \
        --quiet --json "$out" --algo $code 2>&1 | quiet | tail -2
    done
  done
  bench
done
/usr/bin/env python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
one = {}
for r in rows:
    if r.get("command") == "gpu-bench" and r["engine"] == "gpu-winograd":
        k = (r["dtype"], r["n"])
        one[k] = min(one.get(k, 1e30), r["time_median"])
print("\n| dtype | n | GPUs | algorithm | times s | vs one GPU (best gpu-bench level) | passed | words = analytic |")
print("|---|---|---|---|---|---|---|---|")
runs = {}
for r in rows:
    if "algo" in r:
        lay = r.get("layout", "")
        name = r["algo"] + (" " + lay.split("steps ")[1].split(",")[0] if r["algo"] == "caps" and "steps " in lay else "")
        runs.setdefault((r["dtype"], r["m"], r["ranks"], name), []).append(r)
for (dt, n, p, name), rs in sorted(runs.items()):
    ts = sorted(x["time_median"] for x in rs)
    med = ts[len(ts) // 2] if len(ts) % 2 else 0.5 * (ts[len(ts) // 2 - 1] + ts[len(ts) // 2])
    ref = one.get((dt, n))
    print(f"| {dt} | {n} | {p} | {name} | {', '.join(f'{t:.4f}' for t in ts)} | "
          f"{(ref / med if ref else float('nan')):.3f}x | {all(x.get('passed') for x in rs)} | "
          f"{all(x.get('words_max') == x.get('analytic_words_max') for x in rs)} |")
PY
