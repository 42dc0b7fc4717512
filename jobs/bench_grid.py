"""The 2-D process grid distmm's SUMMA takes (choose_grid_2d, mpi/runtime/grid.cpp), for the
benchmarks that lay out matrices in its blocks (bench_python_gpu.py) or shard them alike
(bench_jax_matmul.py): pr x pc = p minimising m pc + n pr, the first such."""


def grid_2d(p, m, n):
    best, cost = (p, 1), float("inf")
    for pr in range(1, p + 1):
        if p % pr:
            continue
        pc = p // pr
        c = float(m) * pc + float(n) * pr
        if c < cost - 1e-9:
            best, cost = (pr, pc), c
    return best
