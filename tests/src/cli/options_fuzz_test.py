#!/usr/bin/python3
"""Options and DISTMM_* settings parsed strictly, and ranks that agree (issue 44): every refused
case ends with exit 2 (non-zero under mpirun) and exactly one `distmm: error:` line naming the
fix, in bounded time, writing nothing; ranks of an MPMD launch that differ in any option, file or
setting are refused by name instead of hanging or passing with a wrong product; the PDGEMM
drop-in reports a malformed setting once and ends the job; then a seeded fuzz of every `run` and
`plan` option and of the environment: no hang, no crash, no silent success on a refused case, no
file left or clobbered.
usage: options_fuzz_test.py DISTMM MPIEXEC [PXGEMM_DRIVER LIBDISTMM_SCALAPACK]"""
import hashlib
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

from checks import check, finish, skip

bin_, mpiexec = sys.argv[1], sys.argv[2]
driver, droplib = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else (None, None)
MPI = [mpiexec, "--oversubscribe"]



class Result:
    def __init__(self, rc, out, err, seconds):
        self.rc, self.out, self.err, self.seconds = rc, out, err, seconds
        self.errors = [l for l in err.splitlines() if "distmm: error" in l]

    def crashed(self):
        text = self.err + self.out
        return self.rc < 0 or any(s in text for s in ("terminate called", "internal error", "Segmentation fault",
                                                      "signal", "core dumped", "Aborted"))

    def __str__(self):
        return f"rc={self.rc} after {self.seconds:.1f} s, errors {self.errors}, stderr tail: {self.err[-400:]!r}"


def launch(argv, cwd, env=None, timeout=60):
    """The command's Result, or None when it outlived `timeout` (its whole process group killed)."""
    t0 = time.time()
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None
    return Result(p.returncode, out, err, time.time() - t0)


def with_env(extra):
    env = dict(os.environ)
    env.update(extra or {})
    return env


def distmm(args, cwd, ranks=0, env=None, timeout=60):
    argv = [bin_] + args if ranks == 0 else MPI + ["-n", str(ranks), bin_] + args
    return launch(argv, cwd, with_env(env), timeout)


def snapshot(d):
    """Every file under d with its content's hash: what a case must leave as it was."""
    files = {}
    for root, _, names in os.walk(d):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                files[os.path.relpath(p, d)] = hashlib.sha256(f.read()).hexdigest()
    return files


def refused(what, args, pattern, cwd, ranks=0, env=None, limit=60, command="run"):
    before = snapshot(cwd)
    r = distmm([command] + args, cwd, ranks, env, timeout=limit)
    if r is None:
        return check(False, f"refused: {what}", f"no answer within {limit} s")
    code_ok = r.rc == 2 if ranks == 0 else r.rc != 0
    ok = code_ok and len(r.errors) == 1 and pattern in r.errors[0] and not r.crashed()
    check(ok and snapshot(cwd) == before, f"refused: {what} (P={ranks})",
          f"{r}; files changed: {set(snapshot(cwd).items()) ^ set(before.items())}")


def runs(what, args, cwd, ranks=0, env=None, limit=120, command="run"):
    r = distmm([command] + args, cwd, ranks, env, timeout=limit)
    ok = r is not None and r.rc == 0 and not r.errors and ("PASSED" in r.out or command == "plan")
    check(ok, f"runs: {what} (P={ranks})", str(r))
    return r


with tempfile.TemporaryDirectory() as d:
    rng = np.random.default_rng(44)
    for name, shape in (("A", (20, 30)), ("B", (30, 20)), ("C0", (20, 20))):
        np.save(f"{d}/{name}.npy", rng.standard_normal(shape))
    files = ["--a", "A.npy", "--b", "B.npy", "--out", "out.npy"]

    # 1. Options parsed strictly: each refused with one line naming the fix, nothing written.
    refusals = [
        ("--transa= (empty; once meant T)", files + ["--transa="], "--transa= has an empty value"),
        ("--transb= (empty)", files + ["--transb="], "--transb= has an empty value"),
        ("--out '' (empty)", ["--a", "A.npy", "--b", "B.npy", "--out", ""], "'' has an empty value"),
        ("--json= (empty)", ["--size", "8", "--json="], "--json"),
        ("f32 --alpha 1e39 overflows", ["--size", "8", "--dtype", "f32", "--alpha", "1e39"], "overflows f32"),
        ("f32 --alpha 1e-46 flushes to 0", ["--size", "8", "--dtype", "f32", "--alpha", "1e-46"],
         "below f32's smallest normal number 1.17549e-38"),
        ("f32 --beta 1e-40 is subnormal", ["--size", "8", "--dtype", "f32", "--beta", "1e-40"], "smallest normal"),
        ("c32 --alpha 1+1e39j: the imaginary part overflows", ["--size", "8", "--dtype", "c32", "--alpha", "1+1e39j"],
         "overflows c32"),
        ("c32 --beta 1e-45j", ["--size", "8", "--dtype", "c32", "--beta", "1e-45j"], "smallest normal"),
        ("f64 --alpha 1e-310 (subnormal)", ["--size", "8", "--alpha", "1e-310"], "below f64's smallest normal"),
        ("f64 --alpha 1e309", ["--size", "8", "--alpha", "1e309"], "is out of range"),
        ("--alpha ' 1' (blank)", ["--size", "8", "--alpha", " 1"], "is not a number"),
        ("--alpha 0x10 (hex)", ["--size", "8", "--alpha", "0x10"], "is not a number"),
        ("--seed -1 (wrapped to 2^64-1)", ["--size", "8", "--seed", "-1"], "--seed '-1' is not a seed"),
        ("--seed 2^64", ["--size", "8", "--seed", "18446744073709551616"], "is not a seed: use an integer from 0"),
        ("--seed 99999999999999999999999", ["--size", "8", "--seed", "99999999999999999999999"], "is not a seed"),
        ("--seed 1.5", ["--size", "8", "--seed", "1.5"], "is not a seed"),
        ("--beta 3 with files, no --c (added 3 x a generated C0)", files + ["--beta", "3"],
         "--beta applies only with --c C0.npy"),
        ("--beta 0 with files, no --c", files + ["--beta", "0"], "--beta applies only with --c C0.npy"),
        ("--c without --beta", files + ["--c", "C0.npy"], "is used only with --beta"),
        ("--caps-steps DDDDDDDDDD at 40^3 (hours)", ["--size", "40", "--algo", "caps", "--caps-steps", "D" * 10],
         "use at most 6"),
        ("--caps-steps of 9 at 1024^3 (7^9 leaves)",
         ["--size", "1024", "--algo", "caps", "--caps-steps", "D" * 9, "--verify", "none"], "use at most 8"),
        ("--caps-steps DDDDXX at 16^3", ["--size", "16", "--algo", "caps", "--caps-steps", "DDDDXX"], "use at most 4"),
        ("--caps-steps by the largest dimension", ["--m", "2", "--n", "2", "--k", "1", "--algo", "caps",
                                                   "--caps-steps", "DD"], "use at most 1"),
        ("--size -3", ["--size", "-3"], "--m must be at least 1"),
        ("--m 3000000000", ["--m", "3000000000"], "exceeds 2^31-1"),
        ("--size 2000000000 (no memory)", ["--size", "2000000000", "--verify", "none"], "the operands alone need"),
        ("--repeat 0", ["--size", "8", "--repeat", "0"], "--repeat 0 is out of range"),
        ("--mem-limit 4X", ["--size", "8", "--mem-limit", "4X"], "is not a size"),
        ("--mem-limit 0.1 (below a byte)", ["--size", "8", "--mem-limit", "0.1"], "is not a size"),
    ]
    for what, args, pattern in refusals:
        refused(what, args, pattern, d)
    for what, args, pattern in refusals:  # a few again under mpirun: every rank leaves
        if what.startswith(("--transa=", "--seed -1", "--beta 3", "--caps-steps DDDDDDDDDD")):
            refused(what, args, pattern, d, ranks=2)
    # The rest of the commands' numbers.
    for what, args, pattern, command in [
        ("engine-bench --block 0 (SIGFPE)", ["--sizes", "8", "--block", "0", "--engines", "mmra-shared:0"],
         "--block: Value 0 not in range", "engine-bench"),
        ("engine-bench --sizes beyond memory", ["--sizes", "99999999"], "needs four", "engine-bench"),
        ("engine-bench --threads -1", ["--sizes", "8", "--threads", "-1"], "not in range", "engine-bench"),
        ("accuracy --threads -2", ["--n", "8", "--threads", "-2"], "not in range", "accuracy"),
        ("calibrate --threads -1", ["--threads", "-1", "--file", "m.json"], "not in range", "calibrate"),
    ]:
        refused(what, args, pattern, d, command=command)
    # plan --ranks: refused before a process starts (100000 once exhausted the machine).
    for ranks in ("0", "-1", "100000", "99999999999"):
        refused(f"plan --ranks {ranks}", ["--ranks", ranks, "--size", "64"], "--ranks", d, limit=15, command="plan")
    # DISTMM_* settings in the CLI: checked before any work.
    for var, value in [("DISTMM_CAPS_BALANCE", "yes"), ("DISTMM_MEM_LIMIT", "4X"), ("DISTMM_DEVICE_COMM", "nccl2"),
                       ("DISTMM_CAPS_SKEW", "3"), ("DISTMM_EMULATION_PROFILE", "on"), ("DISTMM_THREADS", "0")]:
        refused(f"{var}={value}", ["--size", "8"], f"{var}='{value}' is not valid", d, env={var: value})
    refused("DISTMM_MPIRUN='' for plan --ranks", ["--ranks", "2", "--size", "8"], "DISTMM_MPIRUN is empty", d,
            env={"DISTMM_MPIRUN": ""}, command="plan")
    # What stays allowed (so that the refusals above are not a refuse-everything).
    runs("--seed 2^64-1", ["--size", "8", "--seed", "18446744073709551615"], d)
    runs("generated inputs with --beta 3 (a random C0, as documented)", ["--size", "8", "--beta", "3"], d)
    runs("files with --c and --beta", files + ["--c", "C0.npy", "--beta", "2", "--verify", "full"], d)
    check(os.path.exists(f"{d}/out.npy"), "files with --c and --beta wrote out.npy")
    os.remove(f"{d}/out.npy")
    runs("f32 --alpha 1e30 --beta 2e-38 (normal numbers)",
         ["--size", "8", "--dtype", "f32", "--alpha", "1e30", "--beta", "2e-38"], d)
    runs("--caps-steps of 6 at 64^3", ["--size", "64", "--algo", "caps", "--caps-steps", "D" * 6], d)
    runs("--caps-steps DDD at 1 x 5 x 3 (padded to 8)", ["--m", "1", "--n", "5", "--k", "3", "--algo", "caps",
                                                         "--caps-steps", "DDD"], d)
    runs("--caps-steps DD at 256 x 256 x 3 (k padded)", ["--m", "256", "--n", "256", "--k", "3", "--algo", "caps",
                                                        "--caps-steps", "DD"], d)
    runs("DISTMM_MEM_LIMIT=4G and DISTMM_CAPS_BALANCE=0", ["--size", "8"], d,
         env={"DISTMM_MEM_LIMIT": "4G", "DISTMM_CAPS_BALANCE": "0"})
    runs("plan --ranks 2", ["--ranks", "2", "--size", "64"], d, command="plan")

    # 2. Ranks launched differently (MPMD): refused by name within the time bound, nothing written.
    d1, d2 = f"{d}/one", f"{d}/two"
    os.mkdir(d1), os.mkdir(d2)
    for name in ("A", "B"):
        os.link(f"{d}/{name}.npy", f"{d1}/{name}.npy")
    np.save(f"{d2}/A.npy", rng.standard_normal((20, 30)))  # same name and shape, other content
    np.save(f"{d2}/B.npy", np.load(f"{d1}/B.npy"))          # same content, another modification time
    os.utime(f"{d2}/B.npy", ns=(1_000_000_000, 1_000_000_000))

    def mpmd(what, left, right, pattern, dirs=(d, d), env_right=(), expect_refusal=True):
        before = snapshot(d)
        argv = MPI + ["-n", "1", "-wdir", dirs[0], bin_, "run", "--threads", "1"] + left + \
            [":", "-n", "1", "-wdir", dirs[1]] + list(env_right) + [bin_, "run", "--threads", "1"] + right
        r = launch(argv, d, with_env({}), timeout=60)
        if r is None:
            return check(False, f"MPMD {what}", "hung (60 s)")
        if not expect_refusal:
            return check(r.rc == 0 and "PASSED" in r.out and not r.errors, f"MPMD alike: {what} runs", str(r))
        ok = r.rc != 0 and len(r.errors) == 1 and pattern in r.errors[0] and not r.crashed()
        check(ok and snapshot(d) == before, f"MPMD {what}: refused naming it", str(r))

    gen = ["--size", "16"]
    mpmd("--algo summa : cannon", gen + ["--algo", "summa"], gen + ["--algo", "cannon"],
         "--algo is 'summa' on rank 0 but 'cannon' on rank 1")
    mpmd("--size", ["--size", "16"], ["--size", "24"], "--size is '16' on rank 0 but '24'")
    mpmd("--dtype", gen + ["--dtype", "f32"], gen + ["--dtype", "f64"], "--dtype is 'f32'")
    mpmd("--seed", gen + ["--seed", "1"], gen + ["--seed", "2"], "--seed is '1'")
    mpmd("--transa", files + ["--transb"], files + ["--transb", "--transa"], "--transa is (not given)")
    mpmd("--verify", gen + ["--verify", "freivalds"], gen + ["--verify", "full"], "--verify is 'freivalds'")
    mpmd("--a: same name, other content", files, files, "--a is 'A.npy (", dirs=(d1, d2))
    os.remove(f"{d2}/A.npy")
    os.link(f"{d1}/A.npy", f"{d2}/A.npy")
    mpmd("--b: same content, other modification time", files, files, "--b is 'B.npy (", dirs=(d1, d2))
    mpmd("an environment setting", gen, gen, "DISTMM_CAPS_BALANCE is (unset) on rank 0 but '0'",
         env_right=["env", "DISTMM_CAPS_BALANCE=0"])
    mpmd("an option that does not parse", gen, gen + ["--bogus"], "(not parsed)")
    mpmd("--help on one side", gen, ["--help"], "(help)")
    mpmd("the same options", gen + ["--algo", "summa"], gen + ["--algo", "summa"], "", expect_refusal=False)
    os.utime(f"{d2}/B.npy", ns=(os.stat(f"{d1}/B.npy").st_mtime_ns,) * 2)
    mpmd("the same files", files, files, "", dirs=(d1, d1), expect_refusal=False)
    for sub in (d1, d2):
        if os.path.exists(f"{sub}/out.npy"):
            os.remove(f"{sub}/out.npy")

    # 3. The drop-in: a malformed setting is one line and the end of the job, never a hang or a
    # silent default; DISTMM_MEM_LIMIT=4G is 4 GiB (it was read as 4 bytes: one-column panels).
    if driver:
        drop = {"LD_PRELOAD": droplib, "DISTMM_SCALAPACK_MIN": "0"}

        def pxgemm(np_, settings, args=("random", "7", "2")):
            env = dict(drop, **settings)
            xs = [x for k in env for x in ("-x", k)]
            return launch(MPI + ["-n", str(np_)] + xs + [driver] + list(args), d, with_env(env), timeout=90)

        for var, value in [("DISTMM_MEM_LIMIT", "abc"), ("DISTMM_MEM_LIMIT", "4X"), ("DISTMM_MEM_LIMIT", ""),
                           ("DISTMM_THREADS", "0"), ("DISTMM_THREADS", "many"), ("DISTMM_PANEL", "-1"),
                           ("DISTMM_SCALAPACK_MIN", "abc"), ("DISTMM_SCALAPACK_MIN", "-1"), ("DISTMM_ALGO", "scalapack"),
                           ("DISTMM_ALGO", "fast"), ("DISTMM_ENGINE", "nope"), ("DISTMM_VERBOSE", "9"),
                           ("DISTMM_SCALAPACK_DIRECT", "yes"), ("DISTMM_KSPLIT_BALANCE", "2"),
                           ("DISTMM_KSPLIT_SKEW", "3")]:
            r = pxgemm(2, {var: value})
            ok = r is not None and r.rc != 0 and len(r.errors) == 1 and f"{var}='{value}'" in r.errors[0]
            check(ok and "terminate called" not in r.err, f"drop-in: {var}='{value}' ends the job with one line",
                  str(r) if r else "hung (90 s)")
        panels = {}
        for limit in (None, "4G"):
            settings = {"DISTMM_VERBOSE": "2", "DISTMM_SCALAPACK_DIRECT": "force"}
            if limit:
                settings["DISTMM_MEM_LIMIT"] = limit
            r = pxgemm(4, settings, args=())
            ok = r is not None and r.rc == 0 and " 0 failed" in r.out
            check(ok, f"drop-in: DISTMM_MEM_LIMIT={limit} runs every case", str(r))
            found = re.search(r"37 x 37 x 37, algorithm block-cyclic summa \(.*, (\d+) panels\)", r.err if r else "")
            panels[limit] = int(found.group(1)) if found else None
        check(panels["4G"] is not None and panels["4G"] == panels[None],
              f"drop-in: DISTMM_MEM_LIMIT=4G gives the panels of the default share ({panels})")
    else:
        skip("the drop-in cases (no driver given)")

    # 4. A seeded fuzz of every run/plan option and of the settings: values of each one's type,
    # its edges and garbage. Each case: an answer in bounded time, no crash, exit 0 only with
    # PASSED (or a plan), a refused case never exit 0, the inputs untouched and nothing left.
    gen_ = random.Random(4444)
    size = (["1", "2", "7", "16", "33"], ["0", "-1", "3000000000", "x", ""])
    options = {  # (values of the type and its edges, garbage)
        "--size": size, "--m": size, "--n": size, "--k": size,
        "--dtype": (["f32", "f64", "c32", "c64"], ["f16", ""]),
        "--algo": (["auto", "summa", "cannon", "dns", "scalapack", "caps", "cuboid"], ["fast", "SUMMA"]),
        "--engine": (["blas", "strassen", "strassen-lowmem", "winograd", "mmra-tradeoff", "outer-product"], ["nope"]),
        "--seed": (["0", "1", "18446744073709551615"], ["-1", "18446744073709551616", "1.5", "x"]),
        "--fill": (["uniform", "integer"], ["gauss"]),
        "--repeat": (["1", "2"], ["0", "-1", "1000001"]),
        "--warmup": (["0", "1"], ["-1"]),
        "--verify": (["none", "freivalds", "full"], ["maybe"]),
        "--trials": (["1", "3"], ["0", "1001"]),
        "--alpha": (["1", "-2.5", "0", "1e30", "1e-30", "+1"], ["nan", "inf", "x", " 1", "1e400", "1e-400", "0x1"]),
        "--beta": (["0", "1", "-0.5"], ["inf", "1e999", "--"]),
        "--json": (["j.jsonl"], ["", "nodir/j.jsonl"]),
        "--threads": (["0", "1", "2"], ["-1", "5000"]),
        "--mem-limit": (["1G", "512M", "1.5G", "100000000"], ["0", "abc", "4X", "0.5", "-1G"]),
        "--panel": (["1", "5"], ["0", "-2"]),
        "--grid-rows": (["1", "2"], ["0"]),
        "--cuboid-grid": (["1x1x1", "1x1x2"], ["0x1x1", "x", "1x1"]),
        "--nb": (["1", "4"], ["0"]),
        "--caps-steps": (["D", "DD", "X", "auto"], ["D" * 10, "Q", "", "XB"]),
        "--formula": (["strassen", "winograd", "auto"], ["magic"]),
        "--levels": (["0", "1", "auto"], ["-1", "x"]),
        "--cutoff": (["1", "8"], ["0"]),
        "--block": (["1", "7"], ["0", "-3"]),
        "--tau1": (["1", "64"], ["0"]),
        "--tau2": (["1", "64"], ["0"]),
        "--gpu-streams": (["1", "2"], ["0", "17"]),
        "--moduli": (["2", "16"], ["1", "17"]),
        "--accuracy": (["native", "1e-10", "max"], ["fast", "0", "2"]),
        "--stages": (["1", "2x2", "auto"], ["0", "x"]),
        "--transa": (["N", "T", "C"], ["", "Q"]),
        "--transb": (["N", "T", "C"], ["", "Q"]),
    }
    flags = ["--host-staged", "--from-host", "--emulate-device", "--whole-first-stage", "--allow-nonfinite"]
    settings = {  # DISTMM_* values: valid, garbage
        "DISTMM_CAPS_BALANCE": (["0", "1"], ["yes", ""]),
        "DISTMM_CAPS_SKEW": (["0:2"], ["3", "a:b"]),
        "DISTMM_MEM_LIMIT": (["4G", "512M"], ["4X", "abc"]),
        "DISTMM_THREADS": (["1", "4"], ["0", "x"]),
        "DISTMM_ALGO": (["summa", "auto"], ["scalapack"]),
        "DISTMM_ENGINE": (["blas"], ["nope"]),
        "DISTMM_VERBOSE": (["0", "3"], ["4"]),
        "DISTMM_DEVICE_COMM": (["auto", "mpi"], ["nccl2"]),
        "DISTMM_EMULATION_PROFILE": (["0"], ["on"]),
        "DISTMM_EMULATION_LEVEL": (["auto", "0", "1", "2"], ["3", "on"]),
        "DISTMM_SCALAPACK_MIN": (["0", "1e9"], ["-5"]),
    }
    inputs = snapshot(d)
    outcomes = {"passed": 0, "refused": 0, "failed verification": 0}
    cases = 150
    for case in range(cases):
        command = "plan" if gen_.random() < 0.15 else "run"
        ranks = gen_.choice([0, 0, 0, 0, 2])
        args, bad = [], []
        dtype = None
        use_files = gen_.random() < 0.2
        if use_files:
            args += files[:4] + (["--out", "out.npy"] if command == "run" else [])
            if gen_.random() < 0.3:
                args += ["--c", "C0.npy"]
        for flag in gen_.sample(sorted(options), gen_.randint(0, 3)):
            good, garbage = options[flag]
            value = gen_.choice(garbage) if gen_.random() < 0.1 else gen_.choice(good)
            if flag == "--dtype":
                dtype = value
            if value in garbage:
                bad.append(flag)
            if flag in ("--transa", "--transb"):
                args.append(f"{flag}={value}")
            else:
                args += [flag, value]
        if dtype in ("f32", "c32") and gen_.random() < 0.3:  # beyond the single types' range only
            args += ["--alpha", gen_.choice(["1e39", "1e-46"])]
            bad.append("--alpha")
        if gen_.random() < 0.2:
            args.append(gen_.choice(flags))
        if not any(f in args for f in ("--size", "--m", "--n", "--k")) and not use_files:
            args += ["--size", "16"]
        env = {}
        for var in gen_.sample(sorted(settings), gen_.choice([0, 0, 0, 1, 2])):
            good, garbage = settings[var]
            value = gen_.choice(garbage) if gen_.random() < 0.25 else gen_.choice(good)
            env[var] = value
            if value in garbage:
                bad.append(var)
        if command == "plan" and gen_.random() < 0.3:
            args += ["--ranks", gen_.choice(["1", "2", "0", "100000"])]
            if args[-1] in ("0", "100000"):
                bad.append("--ranks")
        r = distmm([command, "--threads", "1"] + args if "--threads" not in args else [command] + args, d, ranks, env,
                   timeout=60)
        label = f"fuzz {case}: P={ranks} {' '.join(f'{k}={v}' for k, v in env.items())} {command} {args}"
        if r is None:
            check(False, label, "hung (60 s)")
        else:
            single = ranks == 0
            if r.rc == 0:
                ok = not bad and not r.errors and (("PASSED" in r.out or "verification          none" in r.out)
                                                   if command == "run" else "distmm plan" in r.out)
                outcomes["passed"] += 1
            elif r.rc == 1 or (not single and "verification failed" in r.err):
                ok = len(r.errors) == 1 and "verification failed" in r.errors[0]
                outcomes["failed verification"] += 1
            else:
                ok = len(r.errors) == 1 and (r.rc == 2 if single else r.rc > 0)
                outcomes["refused"] += 1
            ok &= not r.crashed()
            left = set(snapshot(d)) - set(inputs) - {"out.npy", "j.jsonl"}
            ok &= snapshot(d).items() >= inputs.items() and not left
            ok &= r.rc == 0 or not os.path.exists(f"{d}/out.npy")
            if not ok:
                check(False, label, f"{r}; stdout tail {r.out[-200:]!r}; left {left}; bad {bad}")
            else:
                print(f"fuzz {case}: rc={r.rc} {r.errors[0][15:95] if r.errors else 'PASSED'}")
        for f in ("out.npy", "j.jsonl"):
            if os.path.exists(f"{d}/{f}"):
                os.remove(f"{d}/{f}")
    check(True, f"fuzz: {cases} cases, {outcomes}")

finish()
