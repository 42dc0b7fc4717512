#!/usr/bin/env bash
# GPU engines against cuBLAS, each size in one process (the GPU engines issue's benchmark):
#   jobs/bench_gpu.sh [f32 sizes] [f64 sizes]
# Builds with nvcc when the binary is missing, runs `distmm tune` when the tuning file has no
# leaf-product entries yet, then prints one Markdown table per dtype and, last, the best engine
# per size against the targets. Environment: DISTMM_BIN (default build/distmm),
# DISTMM_TUNING_FILE, REPEAT (3), BENCH_JSON (JSON lines, default a temporary file).
# Through the device tool (build here with nvcc into build-device, carry it and .device):
#   source .device/env.sh && DISTMM_BIN=build-device/distmm bash jobs/bench_gpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
f32_sizes=${1:-"4096 8192 16384 32768"}
f64_sizes=${2:-"4096 8192 16384"}
bin=${DISTMM_BIN:-build/distmm}
[ -x "$bin" ] || bash jobs/build.sh -DDISTMM_CUDA=ON
export DISTMM_TUNING_FILE=${DISTMM_TUNING_FILE:-$HOME/.cache/distmm/tuning.json}
grep -qs '"gemm-f32"' "$DISTMM_TUNING_FILE" || "$bin" tune
out=${BENCH_JSON:-$(mktemp --suffix=.jsonl)}
repeat=${REPEAT:-3}
engines="gpu-winograd gpu-strassen gpu-strassen-lowmem"
"$bin" gpu-bench --dtype f32 --sizes $f32_sizes --levels 1 2 3 --engines $engines --repeat "$repeat" --json "$out"
"$bin" gpu-bench --dtype f32 --sizes 32768 --levels 4 --engines gpu-winograd --repeat "$repeat" --json "$out"
"$bin" gpu-bench --dtype f64 --sizes $f64_sizes --levels 1 2 3 --engines $engines --repeat "$repeat" --json "$out"
"$bin" gpu-bench --dtype f32 --sizes 4096 --levels 0 --engines gpu-tiled --repeat 2 --json "$out"
python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
targets = {("f32", 16384): 1.25, ("f32", 32768): 1.40, ("f64", 16384): 1.15}
print("\n| dtype | n | best engine | levels | speedup vs cuBLAS | target | rel. Frobenius error |")
print("|---|---|---|---|---|---|---|")
best = {}
for r in rows:
    if r["engine"] in ("cublas", "gpu-tiled"):
        continue
    key = (r["dtype"], r["n"])
    if key not in best or r["speedup"] > best[key]["speedup"]:
        best[key] = r
for (dt, n), r in sorted(best.items()):
    t = targets.get((dt, n))
    mark = "" if t is None else (f"{t:.2f}x " + ("met" if r["speedup"] >= t else "NOT met"))
    print(f"| {dt} | {n} | {r['engine']} | {r['levels']} | {r['speedup']:.3f}x | {mark} | {r['rel_frobenius']:.2e} |")
PY
