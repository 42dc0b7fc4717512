#!/usr/bin/env python3
"""A seeded sweep of the problem space through `distmm run`: every algorithm on the rank counts
it takes (primes, 7-multiples for CAPS, squares and cubes), skinny and prime shapes down to 1,
every dtype, several engines, alpha and beta (transposes need --a/--b files: tests/src/cli/npy_test.py
covers them); each run
verified in full against a gathered BLAS product (integer inputs half the time, where the
comparison is exact). Every case must end with exit 0 and "full: PASSED".

usage: sweep_test.py DISTMM MPIEXEC [CASES]
"""
import os
import random
import subprocess
import sys
import tempfile
import time

bin_, mpiexec = os.path.abspath(sys.argv[1]), sys.argv[2]
cases = int(sys.argv[3]) if len(sys.argv) > 3 else 80
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
gen = random.Random(int(os.environ.get("SWEEP_SEED", "20261123")))


def root(p, e):
    r = round(p ** (1.0 / e))
    return r ** e == p


def caps_ok(p):
    while p % 7 == 0:
        p //= 7
    return p <= 6


def dim():
    return gen.choice([1, 2, 3, 5, 17, 31, 64, 97, 131, 200, 257])


failures = []
start = time.time()
with tempfile.TemporaryDirectory() as d:
    for case in range(cases):
        P = gen.choice([1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 14, 16, 28])
        algos = ["auto", "summa", "cuboid", "scalapack"]
        if root(P, 2):
            algos.append("cannon")
        if root(P, 3):
            algos.append("dns")
        if caps_ok(P):
            algos += ["caps", "caps"]
        algos.append("caps-dealt")  # CAPS with dealt steps: any P
        algo = gen.choice(algos)
        m, n, k = dim(), dim(), dim()
        if gen.random() < 0.2:  # skinny: one dimension much larger
            which = gen.randrange(3)
            big = gen.choice([600, 1000])
            m, n, k = [big if i == which else gen.choice([1, 3, 8]) for i in range(3)]
        dtype = gen.choice(["f32", "f64", "c32", "c64"])
        args = ["run", "--m", str(m), "--n", str(n), "--k", str(k), "--algo", algo.split("-")[0], "--dtype", dtype,
                "--verify", "full", "--threads", "1", "--repeat", "1", "--warmup", "0",
                "--seed", str(gen.randrange(1000))]
        if gen.random() < 0.5:
            args += ["--fill", "integer"]
        if algo != "scalapack":
            engine = gen.choice(["blas", "blas", "strassen", "winograd", "strassen-lowmem", "mmra-tradeoff"])
            args += ["--engine", engine]
            if engine in ("strassen", "winograd", "strassen-lowmem"):
                args += ["--levels", str(gen.choice([1, 2])), "--cutoff", "8"]
        complex_ = dtype.startswith("c")
        args += ["--alpha=" + gen.choice(["1", "-2", "0.5"] + (["1-2j"] if complex_ else [])),
                 "--beta=" + gen.choice(["0", "1", "-0.5"] + (["0.5j"] if complex_ else []))]
        bfs, q = 0, P
        while q % 7 == 0:
            q //= 7
            bfs += 1
        if algo == "caps" and gen.random() < 0.5:
            steps = gen.choice(["", "D"]) + "B" * bfs + gen.choice(["", "D"])
            if steps:
                args += ["--caps-steps", steps]
        if algo == "caps-dealt":  # up to the BFS steps P allows, then 1-3 dealt levels
            args += ["--caps-steps", gen.choice(["", "D"]) + "B" * gen.randint(0, bfs) + "X" * gen.choice([1, 1, 2, 3])]
        cmd = ([bin_] if P == 1 else [mpiexec, "-n", str(P), "--oversubscribe", bin_]) + args
        try:
            r = subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True, timeout=300)
            good = r.returncode == 0 and "full: PASSED" in r.stdout
            detail = f"rc={r.returncode} {(r.stdout + r.stderr)[-400:]}"
        except subprocess.TimeoutExpired:
            good, detail = False, "timed out"
        if not good:
            failures.append(f"case {case}: P={P} {' '.join(args)}: {detail}")
            print("FAIL", failures[-1], flush=True)

print(f"sweep: {cases} cases in {time.time() - start:.0f} s, {len(failures)} failed")
sys.exit(1 if failures else 0)
