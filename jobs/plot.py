#!/usr/bin/python3
"""Plots distmm results (the JSON lines of `distmm run --json FILE`) to PNG with matplotlib:
time, GFLOP/s, speedup over a baseline (ScaLAPACK by default) and words sent per rank, against
the matrix size, one line per algorithm (or engine) and rank count.
usage: jobs/plot.py RESULTS.jsonl [--out PREFIX] [--baseline scalapack] [--key algo]"""
import argparse
import json
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("jsonl", nargs="+")
ap.add_argument("--out", default="distmm", help="PNG files are PREFIX_time.png, PREFIX_gflops.png, ...")
ap.add_argument("--baseline", default="scalapack")
ap.add_argument("--key", default="algo", help="field that names a line: algo or engine")
args = ap.parse_args()

rows = []
for path in args.jsonl:
    with open(path) as f:
        rows += [json.loads(l) for l in f if l.strip()]
rows = [r for r in rows if "time_median" in r and "m" in r]
if not rows:
    sys.exit("no distmm run records in " + ", ".join(args.jsonl))

series = defaultdict(dict)  # (label, ranks, dtype) -> size -> record (last wins)
for r in rows:
    label = r[args.key] + (f" ({r['layout'].split('steps ')[1].split(',')[0]})" if r.get("algo") == "caps" else "")
    series[(label, r["ranks"], r["dtype"])][r["m"]] = r
base = {}
for (label, P, dt), pts in series.items():
    if label == args.baseline:
        base[(P, dt)] = {s: p["time_median"] for s, p in pts.items()}


def plot(name, ylabel, value, logy=False):
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    drawn = False
    for (label, P, dt), pts in sorted(series.items()):
        xs = sorted(pts)
        ys = [value(pts[x], P, dt, x) for x in xs]
        keep = [(x, y) for x, y in zip(xs, ys) if y is not None]
        if not keep:
            continue
        ax.plot([x for x, _ in keep], [y for _, y in keep], marker="o", label=f"{label}, P={P}, {dt}")
        drawn = True
    if not drawn:
        plt.close(fig)
        return None
    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("matrix size n (m = n = k)")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = f"{args.out}_{name}.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


made = [
    plot("time", "median time (s)", lambda p, P, dt, x: p["time_median"], logy=True),
    plot("gflops", "GFLOP/s (2mnk / median time)", lambda p, P, dt, x: p["gflops"]),
    plot("speedup", f"speedup over {args.baseline} (same run)",
         lambda p, P, dt, x: base.get((P, dt), {}).get(x, 0) / p["time_median"] if base.get((P, dt), {}).get(x) else None),
    plot("words", "words sent per rank (max)",
         lambda p, P, dt, x: p["words_max"] if p.get("words_measured") else p.get("analytic_words_max"), logy=True),
]
for m in made:
    if m:
        print("wrote", os.path.abspath(m))
