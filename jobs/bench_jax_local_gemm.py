"""One GPU: JAX's jit(jnp.matmul) on given shapes, for comparing XLA's GEMM with distmm's local
product on the shapes each GPU multiplies in a distributed run (issue 42, item 2: where XLA's
per-GPU rate comes from). For each dtype and MxNxK: A (m x k) and B (k x n) uniform in [-1, 1)
made on the GPU, one warm-up call, --repeat timed calls each to block_until_ready, the median;
and from the compiled HLO the GEMM XLA chose: its custom-call target (cuBLASLt's matmul, or none
where a Triton or XLA kernel runs it) and the autotuner's selected algorithm. f32 at precision
HIGHEST (full FP32, as distmm's SGEMM). Run XLA_FLAGS=--xla_gpu_autotune_level=0 to see the GEMM
without autotuning. Beside it, distmm's own product on one GPU:

    python3 jobs/bench_jax_local_gemm.py --shapes 16384x16384x32768
    distmm run --engine cublas --dtype f64 --m 16384 --n 16384 --k 32768 --warmup 1 --repeat 5 --verify none
"""
import argparse
import os
import re
import statistics
import sys
import time

try:
    import jax
    import jax.numpy as jnp
except ImportError as e:
    sys.exit("bench_jax_local_gemm.py: cannot import JAX (%s): it needs jax with its CUDA plugin" % e)

jax.config.update("jax_enable_x64", True)  # before any array: f64 stays f64


def shape(text):
    try:
        m, n, k = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError("a shape is MxNxK, e.g. 16384x16384x32768, not '%s'" % text)
    if min(m, n, k) < 1:
        raise argparse.ArgumentTypeError("every side of %s must be at least 1" % text)
    return m, n, k


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", type=shape, nargs="+",
                    default=[(32768, 32768, 32768), (16384, 16384, 32768), (32768, 16384, 32768)],
                    help="MxNxK (default: 32768^3 and its local products on 2 x 2 and 1 x 2 grids)")
    ap.add_argument("--dtypes", nargs="+", choices=("f64", "f32"), default=["f64", "f32"])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    flags = os.environ.get("XLA_FLAGS", "")
    for dname in args.dtypes:
        dt = jnp.float64 if dname == "f64" else jnp.float32
        for (m, n, k) in args.shapes:
            ka, kb = jax.random.split(jax.random.PRNGKey(0))
            a = jax.random.uniform(ka, (m, k), dt, -1, 1)
            b = jax.random.uniform(kb, (k, n), dt, -1, 1)
            f = jax.jit(lambda x, y: jnp.matmul(x, y, precision=jax.lax.Precision.HIGHEST))
            f(a, b).block_until_ready()
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                f(a, b).block_until_ready()
                times.append(time.perf_counter() - t0)
            hlo = f.lower(a, b).compile().as_text()
            targets = sorted(set(re.findall(r'custom_call_target="([^"]+)"', hlo))) or ["none (XLA/Triton kernel)"]
            algorithms = sorted(set(re.findall(r'"selected_algorithm":"?(-?\d+)', hlo)))
            t = statistics.median(times)
            print("jax %s %dx%dx%d: %.1f ms, %.2f TFLOP/s, GEMM %s, algorithm %s%s" % (
                dname, m, n, k, t * 1e3, 2.0 * m * n * k / t / 1e12, ", ".join(targets),
                ", ".join(algorithms) or "-", ", XLA_FLAGS=" + flags if flags else ""), flush=True)
            del a, b


if __name__ == "__main__":
    main()
