#!/usr/bin/python3
"""distmm under bad input and faults, as a user meets them: every option checked against its
range and the others, non-finite inputs named, the tolerance of what ran, --out never clobbering
an input nor leaving a partial or stray file (a full disk on a small tmpfs, SIGINT/SIGTERM), the
--json file checked before the work, a killed rank, and a seeded fuzz of 200 random option sets
that must each end with exit 0 and PASSED, or exit 2 and one error line, in bounded time.
usage: faults_test.py DISTMM MPIEXEC"""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

from checks import check, finish, skip

bin_, mpiexec = sys.argv[1], sys.argv[2]


def cmd(ranks, args):
    base = [bin_, "run", "--threads", "1"] + args
    return base if ranks == 0 else [mpiexec, "-n", str(ranks), "--oversubscribe"] + base


def run(ranks, args, cwd, timeout=120):
    return subprocess.run(cmd(ranks, args), cwd=cwd, capture_output=True, text=True, timeout=timeout)


def error_lines(r):
    return [l for l in r.stderr.splitlines() if "distmm: error" in l]


def usage_error(r, pattern, ranks):
    lines = error_lines(r)
    code_ok = r.returncode == 2 if ranks == 0 else r.returncode != 0
    return code_ok and len(lines) == 1 and pattern in lines[0]


def strays(d):
    return [f for f in os.listdir(d) if ".tmp." in f]


with tempfile.TemporaryDirectory() as d:
    rng = np.random.default_rng(3)
    np.save(f"{d}/A.npy", rng.standard_normal((40, 30)))
    np.save(f"{d}/B.npy", rng.standard_normal((30, 20)))
    a = rng.standard_normal((40, 30))
    a[7, 5] = np.nan
    a[9, 6] = np.nan  # after (7, 5) in column-major order
    np.save(f"{d}/A_nan.npy", a)
    b = rng.standard_normal((30, 20))
    b[2, 3] = np.inf
    np.save(f"{d}/B_inf.npy", b)

    # 1. Options against their ranges and each other: exit 2, one line naming both options.
    for ranks in (0, 3):
        for args, pattern in [
            (["--engine", "mmra-shared", "--block", "0"], "--block 0 is out of range"),
            (["--engine", "mmra-shared", "--block", "-3"], "--block -3 is out of range"),
            (["--engine", "outer-product", "--block", "0"], "--block 0 is out of range"),
            (["--block", "8"], "--block applies only to the tiling engines"),
            (["--algo", "summa", "--caps-steps", "B"], "--caps-steps applies only to --algo caps, not summa"),
            (["--algo", "cannon", "--grid-rows", "2"], "--grid-rows applies only to --algo summa or scalapack"),
            (["--algo", "summa", "--cuboid-grid", "1x1x2"], "--cuboid-grid applies only to --algo cuboid, not summa"),
            (["--algo", "cuboid", "--cuboid-grid", "2x2"], "--cuboid-grid '2x2' is not PMxPNxPK"),
            (["--algo", "cuboid", "--cuboid-grid", "1x0x2"], "--cuboid-grid '1x0x2' is not PMxPNxPK"),
            (["--algo", "cuboid", "--cuboid-grid", "1x1x4"], "--cuboid-grid 1x1x4 needs 4 ranks but"),
            (["--algo", "cuboid", "--cuboid-grid", "2000x2000x2000"], "--cuboid-grid 2000x2000x2000 needs 8000000000 ranks"),
            (["--algo", "cuboid", "--cuboid-grid", ""], "--cuboid-grid '' has an empty value"),
            (["--formula", "winograd"], "--formula applies only to --algo caps"),
            (["--nb", "8"], "--nb applies only to --algo scalapack"),
            (["--algo", "scalapack", "--engine", "winograd"], "--engine applies only to distmm's own algorithms"),
            (["--levels", "3"], "--levels applies only to Strassen-like engines"),
            (["--engine", "winograd", "--tau1", "64"], "--tau1 applies only to the GPU"),
            (["--engine", "blas", "--moduli", "7"], "--moduli applies only to the INT8-emulated engines"),
            (["--moduli", "1"], "--moduli 1 is out of range: use 2 to 16"),
            (["--engine", "blas", "--accuracy", "1e-10"], "--accuracy applies only to the INT8-emulated engines"),
            (["--accuracy", "fast"], "--accuracy fast: use native, max or a relative error in (0, 1) such as 1e-10"),
            (["--accuracy", "2"], "--accuracy 2: use native, max or a relative error in (0, 1)"),
            (["--accuracy", "max", "--moduli", "7"], "--accuracy and --moduli both choose the moduli count: give one of them"),
            (["--from-host"], "--from-host applies only to the GPU engines"),
            (["--engine", "winograd", "--host-staged"], "--host-staged applies only to the GPU engines"),
            (["--stages", "2"], "--stages applies only to GPU engines with host inputs"),
            (["--whole-first-stage"], "--whole-first-stage applies only to GPU engines with host inputs"),
            (["--engine", "cublas", "--emulate-device"], "an emulated device runs a host engine's products"),
            (["--algo", "scalapack", "--emulate-device"], "an emulated device runs a host engine's products"),
            (["--emulate-device", "--size", "6000", "--mem-limit", "300M"], "the emulated device run needs about"),
            (["--engine", "cublas", "--host-staged", "--whole-first-stage"],
             "--whole-first-stage applies only to GPU engines with host inputs"),
            (["--engine", "cublas", "--from-host", "--stages", "2x"], "--stages '2x' is not R or RxC"),
            (["--engine", "cublas", "--from-host", "--stages", "0"], "--stages '0' is not R or RxC"),
            (["--verify", "full", "--trials", "4"], "--trials applies only with --verify freivalds"),
            (["--size", "50", "--m", "40"], "--size and --m both set the shape"),
            (["--a", "A.npy", "--b", "B.npy", "--out", "C.npy", "--size", "9"], "--size applies only to generated inputs"),
            (["--a", "A.npy", "--b", "B.npy", "--out", "C.npy", "--fill", "integer"], "--fill applies only to generated inputs"),
            (["--repeat", "0"], "--repeat 0 is out of range"),
            (["--warmup=-1"], "--warmup -1 is out of range"),
            (["--alpha", "nan"], "--alpha nan is not finite"),
            (["--beta", "inf"], "--beta inf is not finite"),
            (["--mem-limit", "99999999T"], "too large"),
            (["--engine", "winograd", "--levels", "x"], "is not a level count"),
        ]:
            r = run(ranks, args, d)
            check(usage_error(r, pattern, ranks), f"P={ranks} {' '.join(args)}: rc={r.returncode} {error_lines(r)}")

    # 2. The tolerance follows the levels that ran (50 asked, 1 can run on 300 with cutoff 256;
    #    Winograd's variant widens it 18x per level, Higham Sec. 23.2.2).
    r = run(0, ["--engine", "winograd", "--levels", "50", "--size", "300", "--verify", "full", "--json", "t.json"], d)
    import json
    rec = json.loads(open(f"{d}/t.json").read()) if os.path.exists(f"{d}/t.json") else {}
    check(r.returncode == 0 and "levels 50 asked, 1 ran" in r.stdout and rec.get("engine_levels_run") == 1
          and rec.get("error_growth") == 18.0 and rec.get("tolerance", 1) < 1e-12,
          f"tolerance from the levels that ran: {rec.get('tolerance')} {r.stdout[-400:]}")

    # 3. Non-finite inputs: named, exit 2; with --allow-nonfinite verified by position.
    for ranks in (0, 4):
        r = run(ranks, ["--a", "A_nan.npy", "--b", "B.npy", "--out", "C.npy"], d)
        check(usage_error(r, "A has 2 NaNs, first at row 7, column 5", ranks) and not os.path.exists(f"{d}/C.npy"),
              f"P={ranks} NaN in A named: {error_lines(r)}")
        r = run(ranks, ["--a", "A.npy", "--b", "B_inf.npy", "--out", "C.npy", "--verify", "full"], d)
        check(usage_error(r, "B has 1 Inf, first at row 2, column 3", ranks), f"P={ranks} Inf in B named: {error_lines(r)}")
        r = run(ranks, ["--a", "A_nan.npy", "--b", "B_inf.npy", "--out", "C.npy", "--allow-nonfinite"], d)
        ok = r.returncode == 0 and "PASSED" in r.stdout and "compared by position" in r.stdout
        if ok:
            want = np.load(f"{d}/A_nan.npy") @ np.load(f"{d}/B_inf.npy")
            got = np.load(f"{d}/C.npy")
            ok = np.array_equal(np.isfinite(got), np.isfinite(want)) and np.allclose(got[np.isfinite(want)], want[np.isfinite(want)])
        check(ok, f"P={ranks} --allow-nonfinite verified by position: {r.stdout[-300:]} {r.stderr[-300:]}")
        if os.path.exists(f"{d}/C.npy"):
            os.remove(f"{d}/C.npy")

    # 4. --out never replaces an input (same file under another name), --json is checked first.
    shutil.copy(f"{d}/A.npy", f"{d}/A_copy.npy")
    before = open(f"{d}/A_copy.npy", "rb").read()
    for ranks in (0, 2):
        r = run(ranks, ["--a", "A_copy.npy", "--b", "B.npy", "--out", f"{d}/./A_copy.npy"], d)
        check(usage_error(r, "is the same file as --a", ranks) and open(f"{d}/A_copy.npy", "rb").read() == before,
              f"P={ranks} --out = --a refused: {error_lines(r)}")
        t0 = time.time()
        r = run(ranks, ["--size", "64", "--json", "/nonexistent/dir/r.jsonl"], d)
        check(usage_error(r, "directory '/nonexistent/dir' does not exist", ranks) and time.time() - t0 < 30,
              f"P={ranks} bad --json refused up front: {error_lines(r)}")

    # 5. A full disk: exit 1, one line naming the file and the cause, the old file untouched,
    # no temporary left (a 64 KiB tmpfs; needs root).
    full = f"{d}/full"
    os.mkdir(full)
    mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", full],
                                                   capture_output=True).returncode == 0
    if not mounted:
        skip("disk full: mounting a small tmpfs needs root (run the tests as root to cover it)")
    else:
        try:
            np.save(f"{d}/A2.npy", rng.standard_normal((200, 100)))
            np.save(f"{d}/B2.npy", rng.standard_normal((100, 200)))
            np.save(f"{full}/C.npy", np.ones((3, 3)))
            old = open(f"{full}/C.npy", "rb").read()
            for ranks in (0, 3):
                r = run(ranks, ["--a", "A2.npy", "--b", "B2.npy", "--out", f"{full}/C.npy"], d)
                lines = error_lines(r)
                check(r.returncode == 1 and len(lines) == 1 and "no space left" in lines[0] and f"{full}/C.npy" in lines[0]
                      and open(f"{full}/C.npy", "rb").read() == old and not strays(full),
                      f"P={ranks} disk full: rc={r.returncode} {lines} {os.listdir(full)}")
        finally:
            subprocess.run(["umount", full])

    # 6. SIGTERM and SIGINT at any moment leave no output and no temporary file.
    np.save(f"{d}/A3.npy", rng.standard_normal((1500, 1500)))
    for sig in (signal.SIGTERM, signal.SIGINT):
        clean = True
        for delay in (0.3, 0.8, 1.5, 2.5):
            p = subprocess.Popen(cmd(0, ["--a", "A3.npy", "--b", "A3.npy", "--out", "S.npy", "--verify", "none",
                                         "--repeat", "3"]), cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(delay)
            p.send_signal(sig)
            p.wait(timeout=60)
            clean &= not strays(d)
            if os.path.exists(f"{d}/S.npy"):
                os.remove(f"{d}/S.npy")
        check(clean, f"{signal.Signals(sig).name} leaves no temporary file")

    # 7. A killed rank: the others leave within 10 s, no output.
    p = subprocess.Popen(cmd(4, ["--size", "1200", "--repeat", "50", "--verify", "none"]), cwd=d,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    ranks = []
    for _ in range(40):  # the ranks are mpirun's children once started
        time.sleep(0.5)
        ranks = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
        if len(ranks) >= 4:
            break
    time.sleep(1)
    if not ranks:
        skip("killed rank: could not find the ranks' processes")
        os.killpg(p.pid, signal.SIGKILL)
    else:
        os.kill(int(ranks[-1]), signal.SIGKILL)
        t0 = time.time()
        try:
            p.wait(timeout=10)
            check(p.returncode != 0 and time.time() - t0 < 10, f"killed rank: the job ended in {time.time() - t0:.1f} s")
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            check(False, "killed rank: the other ranks still ran after 10 s")

    # 8. A seeded fuzz of the command line: each run ends with exit 0 and PASSED, or exit 2 and
    # exactly one error line, within the time bound; never a signal, a hang or a stray file.
    gen = random.Random(20261123)
    # (valid values first: each option takes one of them 80% of the time, a bad one otherwise)
    choices = {
        "--algo": (["auto", "summa", "cannon", "dns", "scalapack", "caps"], ["fast"]),
        "--engine": (["blas", "strassen", "strassen-lowmem", "winograd", "mmra-tradeoff", "outer-product"], ["nope"]),
        "--dtype": (["f32", "f64", "c32", "c64"], ["f16"]),
        "--verify": (["freivalds", "full", "none"], ["maybe"]),
        "--fill": (["uniform", "integer"], ["gauss"]),
        "--levels": (["0", "1", "2", "auto", "50"], ["-1", "x"]),
        "--cutoff": (["1", "8"], ["0", "-4"]),
        "--block": (["1", "7"], ["0", "-3"]),
        "--grid-rows": (["1", "2"], ["0"]),
        "--panel": (["1", "5"], ["0"]),
        "--caps-steps": (["B", "D", "BD", "X", "DXX"], ["Q", "XB", ""]),
        "--formula": (["strassen", "winograd"], ["magic"]),
        "--alpha": (["1", "-2.5", "1+2j"], ["nan", "x"]),
        "--beta": (["0", "1", "0.5j"], ["inf"]),
        "--repeat": (["1", "2"], ["0"]),
        "--warmup": (["0", "1"], ["-1"]),
        "--trials": (["1", "3"], ["0"]),
        "--nb": (["1", "4"], ["0"]),
        "--mem-limit": (["1G"], ["1K", "lots", "0"]),
    }
    outcomes = {"pass": 0, "usage": 0}
    for case in range(200):
        ranks = gen.choice([0, 0, 0, 1, 2, 3, 4, 7, 8])
        args = []
        if gen.random() < 0.8:
            args += ["--size", str(gen.choice([1, 2, 5, 17, 33, 64] if gen.random() < 0.9 else [0, -3]))]
        else:
            for f in ("--m", "--n", "--k"):
                args += [f, str(gen.choice([1, 3, 13, 40] if gen.random() < 0.95 else [0]))]
        for flag in gen.sample(sorted(choices), gen.randint(0, 4)):
            good, bad = choices[flag]
            args += [flag, gen.choice(good if gen.random() < 0.8 else bad)]
        if gen.random() < 0.15:
            args += ["--allow-nonfinite"]
        t0 = time.time()
        try:
            r = run(ranks, args, d, timeout=90)
        except subprocess.TimeoutExpired:
            check(False, f"fuzz {case}: P={ranks} {' '.join(args)} hung")
            continue
        lines = error_lines(r)
        single = ranks == 0
        if r.returncode == 0:
            ok = "PASSED" in r.stdout or "verification          none" in r.stdout
            outcomes["pass"] += 1
        else:
            ok = len(lines) == 1 and (r.returncode == 2 if single else r.returncode > 0)
            ok &= "internal error" not in r.stderr and "signal" not in r.stderr.lower()
            outcomes["usage"] += 1
        ok &= r.returncode >= 0 and not strays(d)
        if not ok:
            check(False, f"fuzz {case}: P={ranks} {' '.join(args)}: rc={r.returncode} {lines} {r.stderr[-300:]}")
    check(True, f"fuzz: 200 option sets, {outcomes['pass']} ran and passed, {outcomes['usage']} refused with one line")

finish()
