#!/usr/bin/env bash
# GPU engines against cuBLAS, each size in one process (the GPU engines issues' benchmark):
#   jobs/bench_gpu.sh [f32 sizes] [f64 sizes]
# The Strassen-like engines (gpu-winograd, gpu-strassen, gpu-strassen-lowmem) at levels 1-3, and
# the INT8-emulated ones (gpu-ozaki; gpu-winograd-ozaki at levels 1-3; f64 also at 32768, or
# F64_EMULATED_SIZES) with their errors: f32 against cuBLAS DGEMM of the same inputs, f64 against
# a double-double product of sampled rows.
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
grep -qs '"gemm-f32"' "$DISTMM_TUNING_FILE" || "$bin" tune >/dev/null
out=${BENCH_JSON:-$(mktemp --suffix=.jsonl)}
repeat=${REPEAT:-3}
parts=${PARTS:-"strassen emulated"}  # PARTS=emulated: only the INT8-emulated engines' rows
engines="gpu-winograd gpu-strassen gpu-strassen-lowmem"
if [[ " $parts " == *" strassen "* ]]; then
  "$bin" gpu-bench --dtype f32 --sizes $f32_sizes --levels 1 2 3 --engines $engines --repeat "$repeat" --json "$out"
  "$bin" gpu-bench --dtype f32 --sizes 32768 --levels 4 --engines gpu-winograd --repeat "$repeat" --json "$out"
  "$bin" gpu-bench --dtype f64 --sizes $f64_sizes --levels 1 2 3 --engines $engines --repeat "$repeat" --json "$out"
  "$bin" gpu-bench --dtype f32 --sizes 4096 --levels 0 --engines gpu-tiled --repeat 2 --json "$out"
fi
if [[ " $parts " == *" emulated "* ]]; then
  for n in $f32_sizes; do  # one process per size: the emulation's workspace stays that size's
    "$bin" gpu-bench --dtype f32 --sizes "$n" --levels 1 2 3 --engines gpu-ozaki gpu-winograd-ozaki gpu-winograd \
      --repeat "$repeat" --json "$out"
  done
  for n in ${F64_EMULATED_SIZES:-$f64_sizes 32768}; do
    "$bin" gpu-bench --dtype f64 --sizes "$n" --levels 1 2 3 --engines gpu-ozaki gpu-winograd-ozaki gpu-winograd \
      --repeat "$repeat" --json "$out"
  done
fi
python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
targets = {("f32", 16384): 1.25, ("f32", 32768): 1.40, ("f64", 16384): 1.15}
print("\n| dtype | n | best engine | levels | speedup vs cuBLAS | target | rel. Frobenius error |")
print("|---|---|---|---|---|---|---|")
best = {}
for r in rows:
    if r["engine"] in ("cublas", "gpu-tiled") or "ozaki" in r["engine"]:
        continue
    key = (r["dtype"], r["n"])
    if key not in best or r["speedup"] > best[key]["speedup"]:
        best[key] = r
for (dt, n), r in sorted(best.items()):
    t = targets.get((dt, n))
    mark = "" if t is None else (f"{t:.2f}x " + ("met" if r["speedup"] >= t else "NOT met"))
    print(f"| {dt} | {n} | {r['engine']} | {r['levels']} | {r['speedup']:.3f}x | {mark} | {r['rel_frobenius']:.2e} |")

# The emulated engines against the emulation issue's targets: speedup over cuBLAS and error
# against cuBLAS's own (the same process measured both).
print("\n| dtype | n | engine | levels | speedup vs cuBLAS | error | cuBLAS error | target |")
print("|---|---|---|---|---|---|---|---|")
native = {(r["dtype"], r["n"]): r for r in rows if r["engine"] == "cublas"}
for r in sorted((r for r in rows if "ozaki" in r["engine"]), key=lambda r: (r["dtype"], r["n"], r["engine"], r["levels"])):
    base = native[(r["dtype"], r["n"])]
    plain = r["engine"] == "gpu-ozaki"
    t = None
    if plain and r["dtype"] == "f32" and r["n"] in (16384, 32768):
        t = (2.4, 2 * base["rel_frobenius"])
    if not plain and r["dtype"] == "f32" and r["n"] == 32768:
        t = (3.0, 1e-4)
    if plain and r["dtype"] == "f64" and r["n"] == 16384:
        t = (1.2, 2 * base["rel_frobenius"])
    mark = "" if t is None else (f">= {t[0]}x, error <= {t[1]:.1e}: " + ("met" if r["speedup"] >= t[0] and r["rel_frobenius"] <= t[1] else "NOT met"))
    print(f"| {r['dtype']} | {r['n']} | {r['engine']} | {r['levels']} | {r['speedup']:.3f}x | {r['rel_frobenius']:.2e} | {base['rel_frobenius']:.2e} | {mark} |")
PY
