"""JAX's sharded matmul beside distmm (jobs/bench_python_gpu.sh): C = A B (m = n = k = N) with
jax.jit(jnp.matmul) on the local GPUs of one process (JAX's single controller: one process drives
every visible GPU; pick them with CUDA_VISIBLE_DEVICES or --gpus P, the first P):

    python3 jobs/bench_jax_matmul.py --gpus 4 --n 32768

Layouts, as jobs/bench_python_gpu.py's:
  blocks  a Mesh of distmm's pr x pc grid shape (pr * pc = P minimising m pc + n pr, the first such
          pr), axes ('x', 'y'); A, B and C NamedSharding(mesh, P('x', 'y')): A's rows over x and its
          columns (k) over y, B's rows (k) over x and its columns over y, C's rows over x, columns
          over y (SUMMA's blocks); C's sharding given as out_shardings.
  rows    a P x 1 mesh, A, B and C NamedSharding(mesh, P('x', None)): row slabs.
A and B are made on the GPUs where they are sharded (jax.random.uniform under jit with
out_shardings), the matmul compiled once for them, 1 warm-up call (--warmup) and 10 timed
(--repeat), each to block_until_ready; the median reported. f64 with jax_enable_x64. f32 at
precision HIGHEST by default (--precision): full FP32 as cuBLAS's SGEMM in distmm, not TF32.
Checked once (Freivalds: |C x - A (B x)| / (|A|_F |B|_F |x|) within 64 eps / sqrt(k), as
jobs/bench_python_gpu.py checks distmm's). The collectives
XLA compiled in (all-gather, all-to-all, ...) are counted from the compiled HLO. Output: one line
`bench-jax {json}` per case and a line for people; --json FILE appends the JSON objects too.
"""
import argparse
import json
import math
import statistics
import sys
import time

from bench_grid import grid_2d  # (this folder is on sys.path: the script's own)

try:
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
except ImportError as e:
    sys.exit("bench_jax_matmul.py: cannot import JAX (%s): this benchmark needs jax with its CUDA plugin "
             "(pip install 'jax[cuda12]') on the GPU machine" % e)

jax.config.update("jax_enable_x64", True)  # before any array: f64 stays f64

DTYPES = {"f64": jnp.float64, "f32": jnp.float32}
COLLECTIVES = ("all-gather", "all-to-all", "all-reduce", "reduce-scatter", "collective-permute")




def collectives(compiled_text):
    """How often each collective appears as an instruction in the compiled HLO (async pairs once)."""
    out = {}
    for name in COLLECTIVES:
        c = compiled_text.count(" %s(" % name) + compiled_text.count(" %s-start(" % name)
        if c:
            out[name] = c
    return out


def run_case(devices, args, dname, layout, precision):
    P = len(devices)
    n = m = k = args.n
    dtype = DTYPES[dname]
    if layout == "blocks":
        pr, pc = grid_2d(P, m, n)
        spec = PartitionSpec("x", "y")
    else:
        pr, pc = P, 1
        spec = PartitionSpec("x", None)
    mesh = Mesh(np.array(devices).reshape(pr, pc), ("x", "y"))
    sh = NamedSharding(mesh, spec)
    key = (jax.random.key if hasattr(jax.random, "key") else jax.random.PRNGKey)(args.seed)
    ka, kb, kx = jax.random.split(key, 3)

    def uniform(shape):
        return jax.jit(lambda kk: jax.random.uniform(kk, shape, dtype, -1.0, 1.0), out_shardings=sh)

    a = uniform((m, k))(ka)
    b = uniform((k, n))(kb)
    a.block_until_ready(), b.block_until_ready()
    f = jax.jit(lambda x, y: jnp.matmul(x, y, precision=precision), out_shardings=sh)
    t0 = time.perf_counter()
    compiled = f.lower(a, b).compile()
    compile_s = time.perf_counter() - t0
    try:
        coll = collectives(compiled.as_text())
    except Exception:  # noqa: BLE001 (the count is informative only)
        coll = None
    times = []
    c = None
    for it in range(args.warmup + args.repeat):
        c = None  # the previous C freed before the next is made
        t0 = time.perf_counter()
        c = compiled(a, b)
        c.block_until_ready()
        dt = time.perf_counter() - t0
        if it >= args.warmup:
            times.append(dt)
    rec = {"bench": "jax", "ranks": P, "dtype": dname, "n": n, "layout": layout, "grid": "%dx%d" % (pr, pc),
           "spec": str(spec), "c_sharding": str(c.sharding.spec) if hasattr(c.sharding, "spec") else str(c.sharding),
           "precision": args.precision if dname == "f32" else "f64", "compile_seconds": compile_s,
           "collectives": coll, "warmup": args.warmup, "times": times,
           "time_median": statistics.median(times) if times else None,
           "time_mean": statistics.fmean(times) if times else None,
           "tflops": 2.0 * m * n * k / statistics.median(times) / 1e12 if times else None,
           "devices": [str(d) for d in devices], "jax": jax.__version__}
    if not args.no_check:
        # in float64 (f32 parts cast one at a time): the check's own rounding stays negligible
        f64 = jnp.float64
        x = jax.random.uniform(kx, (n,), f64, -1.0, 1.0)
        hi = jax.lax.Precision.HIGHEST
        w = jnp.matmul(c.astype(f64), x, precision=hi)
        z = jnp.matmul(a.astype(f64), jnp.matmul(b.astype(f64), x, precision=hi), precision=hi)
        diff = float(jnp.linalg.norm(w - z))
        scale = (float(jnp.linalg.norm(a.astype(f64))) * float(jnp.linalg.norm(b.astype(f64)))
                 * float(jnp.linalg.norm(x)))
        rel = diff / scale if scale else 0.0
        # as jobs/bench_python_gpu.py's: a correct product about eps / sqrt(n), a wrong block 1 / n;
        # f32 below HIGHEST precision rounds its inputs to TF32 (or bf16 passes): that eps
        eps = float(jnp.finfo(dtype).eps) if dname == "f64" or args.precision == "highest" else 2.0 ** -10
        tol = 64 * eps / math.sqrt(max(k, 1))
        rec["check"] = {"kind": "freivalds", "rel_error": rel, "tol": tol, "ok": bool(rel <= tol)}
    del a, b, c, compiled
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=32768)
    ap.add_argument("--gpus", type=int, default=0, help="use the first P devices (default: all visible)")
    ap.add_argument("--dtypes", nargs="+", default=["f64", "f32"], choices=sorted(DTYPES))
    ap.add_argument("--layouts", nargs="+", default=["blocks", "rows"], choices=("blocks", "rows"))
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--precision", default="highest", choices=("default", "high", "highest"),
                    help="f32 matmul precision (default highest: full FP32; 'default' may use TF32)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--json", help="append the JSON lines to this file too")
    ap.add_argument("--tag", default="", help="a label copied into each JSON line (e.g. the round)")
    args = ap.parse_args()
    devices = jax.devices()
    if args.gpus:
        if args.gpus > len(devices):
            sys.exit("bench_jax_matmul.py: --gpus %d but JAX sees %d devices (%s)" % (args.gpus, len(devices), devices))
        devices = devices[:args.gpus]
    if devices[0].platform != "gpu":
        print("bench_jax_matmul.py: warning: JAX's devices are %s, not GPUs (no CUDA plugin?)" % devices[0].platform,
              file=sys.stderr, flush=True)
    print("bench_jax_matmul: %d devices (%s), JAX %s, n %d" % (len(devices), getattr(devices[0], "device_kind", "?"),
                                                               jax.__version__, args.n), flush=True)
    precision = {"default": jax.lax.Precision.DEFAULT, "high": jax.lax.Precision.HIGH,
                 "highest": jax.lax.Precision.HIGHEST}[args.precision]
    bad = 0
    for dname in args.dtypes:
        for layout in args.layouts:
            try:
                rec = run_case(devices, args, dname, layout, precision)
            except Exception as e:  # noqa: BLE001 (one case's failure, e.g. out of memory, ends no other)
                print("jax P=%d %s n=%d %s: FAILED: %s: %s" % (len(devices), dname, args.n, layout, type(e).__name__,
                                                              str(e).splitlines()[0] if str(e) else ""), flush=True)
                bad += 1
                continue
            if args.tag:
                rec["tag"] = args.tag
            line = json.dumps(rec, sort_keys=True)
            print("bench-jax " + line, flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(line + "\n")
            chk = rec.get("check")
            ck = "not checked" if not chk else "check %.2e (tol %.1e) %s" % (
                chk["rel_error"], chk["tol"], "ok" if chk["ok"] else "FAILED")
            ts = rec["times"]
            print("jax P=%d %s n=%d %-6s mesh %s %s: compile %.2f s; median %.4f s (%d runs %.4f-%.4f), %.1f TFLOP/s; "
                  "collectives %s; %s" % (len(devices), dname, args.n, layout, rec["grid"], rec["spec"],
                                          rec["compile_seconds"], rec["time_median"], len(ts), min(ts), max(ts),
                                          rec["tflops"], rec["collectives"], ck), flush=True)
            if chk and not chk["ok"]:
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
