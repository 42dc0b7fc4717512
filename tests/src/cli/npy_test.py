#!/usr/bin/python3
"""distmm on users' .npy files, checked against numpy.matmul: every algorithm at 1, 4, 6 and 9
ranks, C and Fortran order, transposes, alpha/beta with C0, float32, float64, complex64 and
complex128 (conjugate transposes, complex alpha/beta); every bad-file
case ends with exit code 2, one line naming the file, and no output file (nor temporary) left.
usage: npy_test.py DISTMM MPIEXEC"""
import os
import subprocess
import sys
import tempfile

import numpy as np

distmm, mpiexec = sys.argv[1], sys.argv[2]
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what, flush=True)


def run(np_, args, cwd):
    cmd = [distmm, "run", "--quiet"] + args
    if np_ > 0:
        cmd = [mpiexec, "-n", str(np_), "--oversubscribe"] + cmd
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


rng = np.random.default_rng(7)
with tempfile.TemporaryDirectory() as d:
    m, k, n = 23, 17, 19
    a = rng.uniform(-1, 1, (m, k))
    b = rng.uniform(-1, 1, (k, n))
    c0 = rng.uniform(-1, 1, (m, n))
    np.save(f"{d}/A.npy", a)
    np.save(f"{d}/B.npy", b)
    np.save(f"{d}/C0.npy", c0)
    np.save(f"{d}/AF.npy", np.asfortranarray(a))
    np.save(f"{d}/AT.npy", a.T.copy())          # A stored transposed: use --transa
    np.save(f"{d}/BTF.npy", np.asfortranarray(b.T))
    np.save(f"{d}/A32.npy", a.astype(np.float32))
    np.save(f"{d}/B32.npy", b.astype(np.float32))
    fits = {1: ["summa", "cannon", "dns", "scalapack", "caps"], 4: ["summa", "cannon", "scalapack", "caps"],
            6: ["summa", "scalapack", "caps"], 9: ["summa", "cannon", "scalapack"]}
    ref = 1.5 * a @ b - 0.25 * c0
    for P, algos in fits.items():
        for algo in algos:
            cases = [(["--a", "A.npy", "--b", "B.npy"], a @ b),
                     (["--a", "AT.npy", "--transa", "--b", "BTF.npy", "--transb", "--c", "C0.npy",
                       "--alpha", "1.5", "--beta", "-0.25"], ref),
                     (["--a", "AF.npy", "--b", "B.npy", "--c", "C0.npy", "--alpha", "1.5", "--beta", "-0.25"], ref)]
            for args, want in cases:
                out = f"out_{P}_{algo}.npy"
                r = run(P if P > 1 else 0, args + ["--out", out, "--algo", algo, "--verify", "full"], d)
                ok = r.returncode == 0 and os.path.exists(f"{d}/{out}")
                if ok:
                    got = np.load(f"{d}/{out}")
                    ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-12, atol=1e-12)
                check(ok, f"P={P} {algo} {' '.join(args)}: {r.stderr.strip()[-300:]}")
                if os.path.exists(f"{d}/{out}"):
                    os.remove(f"{d}/{out}")
    r = run(4, ["--a", "A32.npy", "--b", "B32.npy", "--out", "o32.npy"], d)
    got = np.load(f"{d}/o32.npy") if r.returncode == 0 else None
    check(got is not None and got.dtype == np.float32 and
          np.allclose(got, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5, atol=1e-5),
          f"float32 inputs: {r.stderr.strip()}")

    # Complex files (<c8, <c16), C and Fortran order, op = N, T and C (conjugate transpose),
    # a complex alpha and beta, on several rank counts and algorithms.
    rng = np.random.default_rng(5)
    za = rng.standard_normal((23, 17)) + 1j * rng.standard_normal((23, 17))
    zb = rng.standard_normal((17, 19)) + 1j * rng.standard_normal((17, 19))
    zc = rng.standard_normal((23, 19)) + 1j * rng.standard_normal((23, 19))
    np.save(f"{d}/ZA.npy", za)
    np.save(f"{d}/ZAH.npy", np.asfortranarray(za.conj().T))  # A^H stored: --transa=C gives A back
    np.save(f"{d}/ZBT.npy", zb.T.copy())
    np.save(f"{d}/ZB.npy", zb)
    np.save(f"{d}/ZC.npy", zc)
    np.save(f"{d}/ZA8.npy", za.astype(np.complex64))
    np.save(f"{d}/ZB8.npy", zb.astype(np.complex64))
    alpha, beta = 1.5 - 2j, 0.5j
    zref = alpha * za @ zb + beta * zc
    for P, algo in [(0, "summa"), (4, "cannon"), (4, "scalapack"), (6, "summa"), (7, "caps"), (8, "dns")]:
        for args, want in [(["--a", "ZA.npy", "--b", "ZB.npy"], za @ zb),
                           (["--a", "ZAH.npy", "--transa=C", "--b", "ZBT.npy", "--transb", "--c", "ZC.npy",
                             "--alpha", "1.5-2j", "--beta", "0.5j"], zref)]:
            out = f"zout_{P}_{algo}.npy"
            r = run(P, args + ["--out", out, "--algo", algo, "--verify", "full"], d)
            ok = r.returncode == 0 and os.path.exists(f"{d}/{out}")
            if ok:
                got = np.load(f"{d}/{out}")
                ok = got.dtype == np.complex128 and got.shape == want.shape and np.allclose(got, want, rtol=1e-12, atol=1e-12)
            check(ok, f"complex P={P} {algo} {' '.join(args)}: {r.stderr.strip()[-300:]}")
    r = run(4, ["--a", "ZA8.npy", "--b", "ZB8.npy", "--out", "z8.npy", "--engine", "winograd", "--levels", "1",
                "--cutoff", "4"], d)
    got = np.load(f"{d}/z8.npy") if r.returncode == 0 else None
    check(got is not None and got.dtype == np.complex64 and
          np.allclose(got, za.astype(np.complex64) @ zb.astype(np.complex64), rtol=1e-4, atol=1e-4),
          f"complex64 inputs: {r.stderr.strip()}")

    # Bad files: exit 2, one error line naming the file, no output and no temporary left.
    with open(f"{d}/A.npy", "rb") as f:
        good = f.read()
    with open(f"{d}/trunc.npy", "wb") as f:
        f.write(good[: len(good) - 100])
    with open(f"{d}/corrupt.npy", "wb") as f:
        f.write(good[:8] + b"\x40\x00{'descr': '<f8', 'fortran_order': Maybe, 'shape': (23, 17), }".ljust(64) + good[128:])
    with open(f"{d}/notnpy.npy", "wb") as f:
        f.write(b"just some text, not an array\n" * 4)
    np.save(f"{d}/int.npy", np.arange(23 * 17, dtype=np.int32).reshape(23, 17))
    np.save(f"{d}/one.npy", np.arange(5.0))
    np.save(f"{d}/three.npy", np.zeros((2, 3, 4)))
    np.save(f"{d}/big.npy", np.zeros((23, 17), dtype=">f8"))
    bad = [("missing.npy", ["--a", "missing.npy", "--b", "B.npy"], "no such file"),
           ("trunc.npy", ["--a", "trunc.npy", "--b", "B.npy"], "truncated"),
           ("corrupt.npy", ["--a", "corrupt.npy", "--b", "B.npy"], "fortran_order"),
           ("notnpy.npy", ["--a", "notnpy.npy", "--b", "B.npy"], "not a .npy file"),
           ("int.npy", ["--a", "int.npy", "--b", "B.npy"], "<i4"),
           ("one.npy", ["--a", "one.npy", "--b", "B.npy"], "1-D"),
           ("three.npy", ["--a", "three.npy", "--b", "B.npy"], "3-D"),
           ("big.npy", ["--a", "big.npy", "--b", "B.npy"], "big-endian"),
           ("A.npy", ["--a", "A.npy", "--b", "A.npy"], "inner dimensions differ"),
           ("B.npy", ["--a", "A.npy", "--b", "B.npy", "--c", "B.npy", "--beta", "1"], "B.npy is 17 x 19"),
           ("A32.npy", ["--a", "A32.npy", "--b", "B.npy"], "convert one"),
           ("ZA.npy", ["--a", "ZA.npy", "--b", "B.npy"], "convert one"),
           (d, ["--a", d, "--b", "B.npy"], "is a directory"),
           ("nodir", ["--a", "A.npy", "--b", "B.npy", "--out", "nodir/C.npy"], "does not exist")]
    for name, args, pattern in bad:
        for P in (0, 4):
            if "--out" not in args:
                args = args + ["--out", "C_bad.npy"]
            r = run(P, args, d)
            lines = [l for l in r.stderr.splitlines() if "distmm: error" in l]
            ok = (r.returncode == 2 if P == 0 else r.returncode != 0) and len(lines) == 1 \
                and pattern in lines[0] and (name in lines[0] or name == "nodir")
            leftovers = [f for f in os.listdir(d) if f.startswith(".C_bad") or f == "C_bad.npy"]
            check(ok and not leftovers, f"bad file {name} at P={P}: rc={r.returncode} {lines} {leftovers}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
