"""Session 28: where JAX's per-GPU GEMM rate comes from (issue 42 item 2). One GPU, jit(jnp.matmul)
on the local shapes of the 2- and 4-GPU products, f64 and f32 (HIGHEST), medians of 7, and the
cuBLAS call XLA compiled (its custom call's backend config: the algorithm its autotuner picked)."""
import os, re, statistics, sys, time
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
shapes = [(32768, 32768, 32768), (16384, 16384, 32768), (32768, 16384, 32768)]
for dt in (jnp.float64, jnp.float32):
    for (m, n, k) in shapes:
        ka, kb = jax.random.split(jax.random.PRNGKey(0))
        a = jax.random.uniform(ka, (m, k), dt, -1, 1); b = jax.random.uniform(kb, (k, n), dt, -1, 1)
        f = jax.jit(lambda x, y: jnp.matmul(x, y, precision=jax.lax.Precision.HIGHEST))
        c = f(a, b).block_until_ready()
        ts = []
        for _ in range(7):
            t0 = time.perf_counter(); f(a, b).block_until_ready(); ts.append(time.perf_counter() - t0)
        txt = f.lower(a, b).compile().as_text()
        calls = re.findall(r'custom_call_target="([^"]+)"', txt)
        algo = re.findall(r'"selected_algorithm":"?(-?\d+)', txt)
        med = statistics.median(ts)
        print(f"jax {jnp.dtype(dt).name} {m}x{n}x{k}: {med*1e3:.1f} ms, {2*m*n*k/med/1e12:.2f} TFLOP/s, "
              f"calls {calls}, algorithm {algo} flags {os.environ.get('XLA_FLAGS','')}", flush=True)
        del a, b, c
