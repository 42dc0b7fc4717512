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
#
# GEMMul8 beside distmm (issue 43, item 5): given a GEMMul8 build, the emulated rows of each size
# come from gemmul8_bench (cuda/gemmul8_bench.cu: gpu-bench plus GEMMul8's INT8 gemmul8::gemm in
# the same process, on the same inputs, with the same error measure), and a last table sets the
# best distmm row at --accuracy native and the best GEMMul8 row whose error is at most cuBLAS's
# beside the issue's targets. GEMMul8 is built apart, not vendored:
#   git clone https://github.com/RIKEN-RCCS/GEMMul8 && cd GEMMul8/GEMMul8 &&
#     make BACKEND=cuda GPU_ARCH=90 lib/libgemmul8.a
#   GEMMUL8_DIR=$PWD/GEMMul8/GEMMul8 PARTS=emulated bash jobs/bench_gpu.sh "16384 32768" 16384
# GEMMUL8_DIR builds gemmul8_bench into build-gemmul8 (cmake -DDISTMM_GEMMUL8_DIR=...) unless
# GEMMUL8_BIN names one built already. GEMMUL8_F32 ("7:fast 8:fast") and GEMMUL8_F64 ("14:fast
# 14:accurate 16:accurate"): GEMMul8's configurations, MODULI:MODE; a configuration whose
# workspace does not fit is skipped (logged). EMULATED_ACCURACY ("native max"): distmm's
# --accuracy values (native with every emulated engine, the others gpu-ozaki alone);
# EMULATED_LEVELS ("1 2 3"). build-g8run/run.sh runs this on a carried build.
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
g8bin=${GEMMUL8_BIN:-}
if [ -z "$g8bin" ] && [ -n "${GEMMUL8_DIR:-}" ]; then
  cmake -S . -B build-gemmul8 -DCMAKE_BUILD_TYPE=Release -DDISTMM_CUDA=ON -DDISTMM_TESTS=OFF \
    -DDISTMM_GEMMUL8_DIR="$GEMMUL8_DIR" >/dev/null
  cmake --build build-gemmul8 -j"$(nproc)" --target gemmul8_bench
  g8bin=build-gemmul8/gemmul8_bench
fi
g8_f32=${GEMMUL8_F32-"7:fast 8:fast"}
g8_f64=${GEMMUL8_F64-"14:fast 14:accurate 16:accurate"}
accuracies=${EMULATED_ACCURACY:-"native max"}
levels=${EMULATED_LEVELS:-"1 2 3"}
engines="gpu-winograd gpu-strassen gpu-strassen-lowmem"
if [[ " $parts " == *" strassen "* ]]; then
  "$bin" gpu-bench --dtype f32 --sizes $f32_sizes --levels 1 2 3 --engines $engines --repeat "$repeat" --json "$out"
  "$bin" gpu-bench --dtype f32 --sizes 32768 --levels 4 --engines gpu-winograd --repeat "$repeat" --json "$out"
  "$bin" gpu-bench --dtype f64 --sizes $f64_sizes --levels 1 2 3 --engines $engines --repeat "$repeat" --json "$out"
  "$bin" gpu-bench --dtype f32 --sizes 4096 --levels 0 --engines gpu-tiled --repeat 2 --json "$out"
fi
emulated() {  # dtype n: one process per size (the emulation's workspace stays that size's)
  local dt=$1 n=$2 acc g8
  [ "$dt" = f32 ] && g8=$g8_f32 || g8=$g8_f64
  local args=(--dtype "$dt" --sizes "$n" --repeat "$repeat" --json "$out")
  for acc in $accuracies; do
    if [ "$acc" != native ]; then
      "$bin" gpu-bench "${args[@]}" --levels 1 --engines gpu-ozaki --accuracy "$acc"
    elif [ -n "$g8bin" ]; then  # GEMMul8's rows after distmm's, the same process and inputs
      "$g8bin" "${args[@]}" --levels $levels --engines gpu-ozaki gpu-winograd-ozaki gpu-winograd \
        ${g8:+--gemmul8 $g8}
    else
      "$bin" gpu-bench "${args[@]}" --levels $levels --engines gpu-ozaki gpu-winograd-ozaki gpu-winograd
    fi
  done
}
if [[ " $parts " == *" emulated "* ]]; then
  for n in $f32_sizes; do emulated f32 "$n"; done
  for n in ${F64_EMULATED_SIZES:-$f64_sizes 32768}; do emulated f64 "$n"; done
fi
python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
targets = {("f32", 16384): 1.25, ("f32", 32768): 1.40, ("f64", 16384): 1.15}
print("\n| dtype | n | best engine | levels | speedup vs cuBLAS | target | rel. Frobenius error |")
print("|---|---|---|---|---|---|---|")
best = {}
for r in rows:
    if r["engine"] in ("cublas", "gpu-tiled") or "ozaki" in r["engine"] or r.get("product"):
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
print("\n| dtype | n | engine | levels | moduli rule | speedup vs cuBLAS | error | cuBLAS error | target |")
print("|---|---|---|---|---|---|---|---|---|")
# Each process's own cuBLAS row (the max-accuracy rows come from a process of their own): the
# baseline of the rows that follow it in the file.
native, base_of = {}, []
for r in rows:
    if r["engine"] == "cublas":
        native[(r["dtype"], r["n"])] = r
    base_of.append(native.get((r["dtype"], r["n"])))
for r, b in zip(rows, base_of):
    r["_cublas_error"] = b["rel_frobenius"] if b else float("nan")
for r in sorted((r for r in rows if "ozaki" in r["engine"]), key=lambda r: (r["dtype"], r["n"], r["engine"], r["levels"])):
    base = {"rel_frobenius": r["_cublas_error"]}
    plain = r["engine"] == "gpu-ozaki"
    t = None
    if plain and r["dtype"] == "f32" and r["n"] in (16384, 32768):
        t = (2.4, 2 * base["rel_frobenius"])
    if not plain and r["dtype"] == "f32" and r["n"] == 32768:
        t = (3.0, 1e-4)
    if plain and r["dtype"] == "f64" and r["n"] == 16384:
        t = (1.2, 2 * base["rel_frobenius"])
    mark = "" if t is None else (f">= {t[0]}x, error <= {t[1]:.1e}: " + ("met" if r["speedup"] >= t[0] and r["rel_frobenius"] <= t[1] else "NOT met"))
    print(f"| {r['dtype']} | {r['n']} | {r['engine']} | {r['levels']} | {r.get('config', '')} | {r['speedup']:.3f}x | {r['rel_frobenius']:.2e} | {base['rel_frobenius']:.2e} | {mark} |")

# GEMMul8 beside distmm (issue 43): every GEMMul8 row, then, last, per size the fastest distmm
# row at --accuracy native (its guarantee, docs/accuracy.md) and the fastest GEMMul8 row whose
# measured error is at most the same process's cuBLAS error, against the issue's targets
# (speedup over cuBLAS of the same dtype).
g8 = [r for r in rows if r["engine"] == "gemmul8"]
if g8:
    print("\n| dtype | n | GEMMul8 moduli:mode | speedup vs cuBLAS | error | cuBLAS error |")
    print("|---|---|---|---|---|---|")
    for r in sorted(g8, key=lambda r: (r["dtype"], r["n"], r["speedup"])):
        print(f"| {r['dtype']} | {r['n']} | {r['config']} | {r['speedup']:.3f}x | {r['rel_frobenius']:.2e} | {r['_cublas_error']:.2e} |")
    targets43 = {("f32", 16384): 3.5, ("f32", 32768): 3.8, ("f64", 16384): 1.5, ("f64", 32768): 1.8}
    def best(pick, dt, n):
        c = [r for r in rows if pick(r) and r["dtype"] == dt and r["n"] == n and r["rel_frobenius"] <= r["_cublas_error"]]
        return max(c, key=lambda r: r["speedup"]) if c else None
    def cell(r, t, name):
        if r is None:
            return "none at native accuracy | - | - | -"
        met = "-" if t is None else ("met" if r["speedup"] >= t else "NOT met")
        return f"{name(r)} | {r['speedup']:.3f}x | {r['rel_frobenius']:.2e} | {met}"
    distmm_name = lambda r: f"{r['engine']} L{r['levels']} {r.get('config', '')}".strip()
    print("\n| dtype | n | target | distmm (--accuracy native) | speedup | error | met | "
          "GEMMul8 (error <= cuBLAS's) | speedup | error | met | cuBLAS error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for dt, n in sorted({(r["dtype"], r["n"]) for r in rows if r in g8 or "ozaki" in r["engine"]}):
        t = targets43.get((dt, n))
        d = best(lambda r: "ozaki" in r["engine"] and r.get("config") == "accuracy native", dt, n)
        g = best(lambda r: r["engine"] == "gemmul8", dt, n)
        err = native[(dt, n)]["rel_frobenius"]
        print(f"| {dt} | {n} | {'-' if t is None else f'>= {t}x'} | {cell(d, t, distmm_name)} | "
              f"{cell(g, t, lambda r: r['config'])} | {err:.2e} |")
PY
