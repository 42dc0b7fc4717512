#!/usr/bin/env python3
"""Markdown table of distmm JSON lines: per size, each algorithm/engine's median time, GFLOP/s,
and its speedup over the baseline measured in the same file (same run), plus words per rank."""
import argparse
import json
from collections import defaultdict

ap = argparse.ArgumentParser()
ap.add_argument("jsonl")
ap.add_argument("--baseline", default="scalapack", help="algo (or engine) the ratios divide by")
ap.add_argument("--key", default="algo", help="field that labels a row (algo, engine, engine_detail)")
ap.add_argument("--baseline-field", default=None, help="field the baseline is matched on (default: --key)")
args = ap.parse_args()

rows = [json.loads(l) for l in open(args.jsonl) if l.strip()]
by_size = defaultdict(list)
for r in rows:
    by_size[(r["m"], r["n"], r["k"], r["dtype"], r["ranks"])].append(r)

print(f"| m=n=k | dtype | P | {args.key} | median s | GFLOP/s | speedup vs {args.baseline} "
      "| words/rank max (measured) | words/rank max (analytic) | measured/analytic | verified |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for (m, n, k, dt, P), rs in sorted(by_size.items()):
    base = [r for r in rs if r[args.baseline_field or args.key] == args.baseline]
    bt = base[-1]["time_median"] if base else None
    for r in rs:
        sp = f"{bt / r['time_median']:.2f}x" if bt else "n/a"
        wm = f"{r['words_max']:.4g}" if r["words_measured"] else "n/a"
        ratio = (f"{r['words_max'] / r['analytic_words_max']:.3f}"
                 if r["words_measured"] and r["analytic_words_max"] > 0 else "n/a")
        size = f"{m}" if m == n == k else f"{m}x{n}x{k}"
        label = r[args.key] + (f" ({r['layout'].split('steps ')[1].split(',')[0]})" if r["algo"] == "caps" and args.key == "algo" else "")
        print(f"| {size} | {dt} | {P} | {label} | {r['time_median']:.3f} | {r['gflops']:.1f} | {sp} "
              f"| {wm} | {r['analytic_words_max']:.4g} | {ratio} | {'yes' if r['passed'] else 'NO'} |")
