#!/usr/bin/python3
"""distmm's files under hostile paths, alone (0: no mpirun) and under mpirun: a device node, a FIFO,
a socket or a directory as --out, --json or an input is refused at once with one line (exit 2) and left as
it was; a FIFO never hangs a rank; paths of any length the file system takes work (nested
directories of ~250, ~1000 and ~4000 characters, a 250-character file name); every signal that
ends the job during the write leaves no temporary and the old output intact; an output that
cannot be written or moved into place ends with exit 1 (a read-only tmpfs and a bind mount as
root, permissions otherwise); the machine file is checked (not JSON, out of range: named, with the fix); calibrate never writes without a
usable HOME; .npy headers over 1 MiB and unknown format versions get their own messages; and
`run --json -` writes the JSON line to standard output.
usage: files_faults_test.py DISTMM MPIEXEC"""
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

import numpy as np

from checks import check, finish, skip

bin_, mpiexec = sys.argv[1], sys.argv[2]
base_env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
base_env.pop("DISTMM_MACHINE_FILE", None)


def cmd(ranks, args, sub="run"):
    base = [bin_, sub] + (["--threads", "1"] if sub in ("run", "plan") else []) + args
    return base if ranks == 0 else [mpiexec, "-n", str(ranks), "--oversubscribe"] + base


class Hung:
    returncode, stdout, stderr = -999, "", "(hung: killed after the time limit)"


def run(ranks, args, cwd, env=None, sub="run", timeout=120):
    """The finished run, or Hung when it outlived the limit (then killed, with all it started)."""
    p = subprocess.Popen(cmd(ranks, args, sub), cwd=cwd, env=env or base_env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(p.pid)
        p.communicate()
        return Hung()
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def children(pid):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(c) for c in out]


def kill_tree(pid, sig=signal.SIGKILL):
    for c in children(pid):
        kill_tree(c, sig)
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def wait_gone(pids, timeout):
    """Until none of the processes runs (gone, or a zombie), else TimeoutExpired."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        alive = []
        for pid in pids:
            try:
                alive += [pid] if open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0] != "Z" else []
            except OSError:
                pass
        if not alive:
            return
        time.sleep(0.05)
    raise subprocess.TimeoutExpired(str(pids), timeout)


def error_lines(r):
    return [l for l in r.stderr.splitlines() if "distmm: error" in l]


def refused(r, pattern, code=2):
    """One error line holding `pattern`, exit `code` (mpirun passes the ranks' code on)."""
    lines = error_lines(r)
    return r.returncode == code and len(lines) == 1 and pattern in lines[0]


def strays(d):
    return [f for f in os.listdir(d) if ".tmp." in f]


def kind(path):
    m = os.lstat(path).st_mode
    return "chr" if stat.S_ISCHR(m) else "fifo" if stat.S_ISFIFO(m) else "dir" if stat.S_ISDIR(m) else "sock" \
        if stat.S_ISSOCK(m) else "reg" if stat.S_ISREG(m) else "other"


with tempfile.TemporaryDirectory() as d:
    rng = np.random.default_rng(44)
    A, B = rng.standard_normal((40, 30)), rng.standard_normal((30, 20))
    np.save(f"{d}/A.npy", A)
    np.save(f"{d}/B.npy", B)
    os.mkfifo(f"{d}/fifo")
    os.mkdir(f"{d}/adir")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(f"{d}/sock")
    # an existing good output, never replaced by a bad run
    good = A @ B
    np.save(f"{d}/C.npy", good)
    good_bytes = open(f"{d}/C.npy", "rb").read()

    # 1. Not a regular file as an output: refused up front, exit 2, left as it was, nothing created.
    for ranks in (0, 3):
        before = sorted(os.listdir(d))
        for flag, path, what, pattern in [
            ("--out", "/dev/null", "chr", "--out /dev/null is a character device: give a regular file path"),
            ("--out", f"{d}/fifo", "fifo", "is a FIFO (named pipe): give a regular file path"),
            ("--out", f"{d}/adir", "dir", "is a directory: give a regular file path"),
            ("--out", f"{d}/adir/", "dir", "names a directory"),
            ("--out", f"{d}/sock", "sock", "is a socket: give a regular file path"),
            ("--json", "/dev/null", "chr", "--json /dev/null is a character device: give a regular file path"),
            ("--json", f"{d}/fifo", "fifo", "is a FIFO (named pipe): give a regular file path"),
            ("--json", f"{d}/adir", "dir", "is a directory: give a regular file path"),
        ]:
            args = ["--a", "A.npy", "--b", "B.npy"] + ([] if flag == "--out" else ["--out", "Cj.npy"])
            r = run(ranks, args + [flag, path], d, timeout=60)
            check(refused(r, pattern) and kind(path) == what,
                  f"P={ranks} {flag} {path} refused, still {what}: rc={r.returncode} {error_lines(r)}")
        r = run(ranks, ["--size", "16", "--json", f"{d}/fifo"], d, timeout=60)
        check(refused(r, "is a FIFO") and kind(f"{d}/fifo") == "fifo", f"P={ranks} run --size 16 --json FIFO refused: {error_lines(r)}")
        r = run(ranks, ["--size", "16", "--json", f"{d}/fifo"], d, sub="plan", timeout=60)
        check(refused(r, "is a FIFO"), f"P={ranks} plan --json FIFO refused: {error_lines(r)}")
        check(sorted(os.listdir(d)) == before and open(f"{d}/C.npy", "rb").read() == good_bytes,
              f"P={ranks} refused outputs created nothing: {set(os.listdir(d)) ^ set(before)}")

    # 2. Not a regular file as an input: refused at once (never waiting on the FIFO), exit 2.
    for ranks in (0, 2):
        for args, pattern in [
            (["--a", "fifo", "--b", "B.npy", "--out", "C.npy"], "fifo is a FIFO (named pipe): give a regular file"),
            (["--a", "A.npy", "--b", "/dev/zero", "--out", "C.npy"], "/dev/zero is a character device"),
            (["--a", "A.npy", "--b", "adir", "--out", "C.npy"], "adir is a directory"),
            (["--a", "A.npy", "--b", "B.npy", "--c", "fifo", "--beta", "1", "--out", "C.npy"], "fifo is a FIFO"),
        ]:
            t0 = time.time()
            r = run(ranks, args, d, timeout=60)
            check(refused(r, pattern) and open(f"{d}/C.npy", "rb").read() == good_bytes and not strays(d),
                  f"P={ranks} input {' '.join(args)}: refused in {time.time() - t0:.1f} s, rc={r.returncode} {error_lines(r)}")
        env = dict(base_env, DISTMM_MACHINE_FILE=f"{d}/fifo")
        r = run(ranks, ["--size", "16"], d, env=env, timeout=60)
        check(refused(r, f"machine file {d}/fifo is a FIFO"), f"P={ranks} DISTMM_MACHINE_FILE=FIFO refused: {error_lines(r)}")

    # 3. Long paths: nested directories and a long file name, in and out; the product is numpy's.
    for total, leaf in [(250, 10), (1000, 10), (4000, 10), (300, 250)]:
        parts, length = [], len(d)
        while length < total - leaf - 60:
            parts.append("n" * min(200, total - leaf - 60 - length))
            length += len(parts[-1]) + 1
        deep = os.path.join(d, *parts)
        os.makedirs(deep, exist_ok=True)
        name = ("x" * (leaf - 4) + ".npy") if leaf > 10 else "C_long.npy"
        a_in, out = f"{deep}/{'a' * (leaf - 4)}.npy" if leaf > 10 else f"{deep}/A.npy", f"{deep}/{name}"
        np.save(a_in, A)
        for ranks in (0, 3):
            r = run(ranks, ["--a", a_in, "--b", "B.npy", "--out", out], d)
            ok = r.returncode == 0 and os.path.exists(out) and np.allclose(np.load(out), good) and not strays(deep)
            check(ok, f"P={ranks} path of {len(out)} characters (file name {len(name)}): rc={r.returncode} "
                      f"{error_lines(r) or r.stderr[-300:]}")
            if os.path.exists(out):
                os.remove(out)

    # 4. Every signal that ends the job, sent while the output is being written (its temporary
    # seen): no temporary left, the old output intact. A 3000 x 3000 output makes the write long.
    sd = f"{d}/sig"
    os.mkdir(sd)
    np.save(f"{sd}/L.npy", rng.standard_normal((3000, 8)))
    np.save(f"{sd}/R.npy", rng.standard_normal((8, 3000)))
    np.save(f"{sd}/S.npy", np.ones((2, 2)))
    old = open(f"{sd}/S.npy", "rb").read()
    sigs = [signal.SIGHUP, signal.SIGQUIT, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGUSR1,
            signal.SIGUSR2, signal.SIGALRM]
    for ranks in (0, 2):
        for sig in sigs if ranks == 0 else sigs[:4]:
            caught = False
            for attempt in range(4):  # the write lasts a fraction of a second: watch for it
                p = subprocess.Popen(cmd(ranks, ["--a", "L.npy", "--b", "R.npy", "--out", "S.npy", "--verify", "none"]),
                                     cwd=sd, env=base_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
                t0 = time.time()
                while p.poll() is None and time.time() - t0 < 60 and not strays(sd):
                    time.sleep(0.001)
                targets = []
                if p.poll() is None and strays(sd):
                    targets = [p.pid] if ranks == 0 else children(p.pid) + [p.pid]
                    for t in targets:
                        try:
                            os.kill(t, sig)
                        except ProcessLookupError:
                            pass
                    caught = True
                try:
                    p.wait(timeout=30)
                    wait_gone(targets, 30)  # the ranks too, which may outlive a signalled mpirun
                except subprocess.TimeoutExpired:
                    kill_tree(p.pid)
                    p.wait()
                    caught = False
                    check(False, f"P={ranks} {signal.Signals(sig).name}: the job outlived the signal by 30 s")
                if os.path.exists(f"{sd}/S.npy") and open(f"{sd}/S.npy", "rb").read() != old:
                    caught = False  # finished before the signal: restore and try again
                    np.save(f"{sd}/S.npy", np.ones((2, 2)))
                if caught:
                    break
            if not caught:
                check(False, f"P={ranks} {signal.Signals(sig).name}: never caught the job during its write")
                continue
            left = strays(sd)
            check(not left and open(f"{sd}/S.npy", "rb").read() == old and p.returncode != 0,
                  f"P={ranks} {signal.Signals(sig).name} during the write: rc={p.returncode}, temporaries {left}")
            for f in left:
                os.remove(f"{sd}/{f}")

    # 5. An output that cannot be written or moved into place: exit 1, one line, the old file
    # intact (a read-only tmpfs, and an output bound over by a mount for the rename; root only).
    ro = f"{d}/ro"
    os.mkdir(ro)
    mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", ro],
                                                   capture_output=True).returncode == 0
    if not mounted and os.geteuid() != 0:  # permissions bind everyone else
        os.chmod(ro, 0o555)
        for ranks in (0, 3):
            r = run(ranks, ["--a", "A.npy", "--b", "B.npy", "--out", f"{ro}/C.npy"], d)
            check(refused(r, "is not writable", code=1) and os.listdir(ro) == [],
                  f"P={ranks} --out in a directory without write permission: rc={r.returncode} {error_lines(r)}")
        os.chmod(ro, 0o755)
    elif not mounted:
        skip("unwritable output directory: mounting a read-only tmpfs failed")
    else:
        try:
            np.save(f"{ro}/C.npy", good)
            subprocess.run(["mount", "-o", "remount,ro", ro], check=True)
            for ranks in (0, 3):
                r = run(ranks, ["--a", "A.npy", "--b", "B.npy", "--out", f"{ro}/C.npy"], d)
                check(refused(r, "is not writable", code=1) and open(f"{ro}/C.npy", "rb").read() == good_bytes,
                      f"P={ranks} --out in a read-only directory: rc={r.returncode} {error_lines(r)}")
                r = run(ranks, ["--size", "16", "--json", f"{ro}/r.json"], d)
                check(refused(r, "is not writable", code=1) and not os.path.exists(f"{ro}/r.json"),
                      f"P={ranks} --json in a read-only directory: rc={r.returncode} {error_lines(r)}")
                r = run(ranks, ["--file", f"{ro}/m.json"], d, sub="calibrate")
                check(refused(r, "is not writable", code=1) and not os.path.exists(f"{ro}/m.json"),
                      f"P={ranks} calibrate --file in a read-only directory: rc={r.returncode} {error_lines(r)}")
            # The rename refused (EBUSY: the output is a mount point, a file bound over it).
            subprocess.run(["mount", "-o", "remount,rw", ro], check=True)
            np.save(f"{ro}/bound.npy", np.ones((2, 2)))
            subprocess.run(["mount", "--bind", f"{ro}/bound.npy", f"{ro}/C.npy"], check=True)
            try:
                for ranks in (0, 3):
                    r = run(ranks, ["--a", "A.npy", "--b", "B.npy", "--out", f"{ro}/C.npy"], d)
                    check(refused(r, "could not move the finished output into place", code=1)
                          and np.array_equal(np.load(f"{ro}/C.npy"), np.ones((2, 2))) and not strays(ro),
                          f"P={ranks} output that cannot be moved into place: rc={r.returncode} {error_lines(r)}")
            finally:
                subprocess.run(["umount", f"{ro}/C.npy"])
        finally:
            subprocess.run(["umount", "-l", ro])

    # 6. The machine file: not JSON, incomplete or out of range is an error naming the file and
    # the fix; a good one is read; none at the path means the defaults.
    md = f"{d}/machine"
    os.mkdir(md)
    goodm = {"flops_per_s": 2e10, "bytes_per_s": 5e9, "latency_s": 1e-6, "memory_bytes_per_s": 1e10}
    cases = [("text", "not json at all", "is not JSON"),
             ("empty", "", "is not JSON"),
             ("array", "[1, 2]", "is not a JSON object"),
             ("nolat", json.dumps({k: v for k, v in goodm.items() if k != "latency_s"}), "lacks latency_s"),
             ("huge", json.dumps(dict(goodm, latency_s=1e308)), "latency_s 1e+308 is out of range (1e-10 to 1 s)"),
             ("neg", json.dumps(dict(goodm, bytes_per_s=-5)), "bytes_per_s -5 is out of range"),
             ("zero", json.dumps(dict(goodm, flops_per_s=0)), "flops_per_s 0 is out of range"),
             ("word", json.dumps(dict(goodm, memory_bytes_per_s="fast")), "memory_bytes_per_s \"fast\" is out of range")]
    for name, text, pattern in cases:
        with open(f"{md}/{name}.json", "w") as f:
            f.write(text)
    with open(f"{md}/good.json", "w") as f:
        f.write(json.dumps(goodm))
    for ranks in (0, 2):
        for name, text, pattern in cases + [("adir", None, "is a directory")]:
            path = f"{md}/{name}.json" if text is not None else f"{d}/adir"
            r = run(ranks, ["--size", "16"], d, env=dict(base_env, DISTMM_MACHINE_FILE=path))
            check(refused(r, pattern) and path in error_lines(r)[0] and ("distmm calibrate" in error_lines(r)[0]
                                                                        or text is None),
                  f"P={ranks} machine file {name}: rc={r.returncode} {error_lines(r)}")
        r = run(ranks, ["--size", "16"], d, env=dict(base_env, DISTMM_MACHINE_FILE=f"{md}/good.json"))
        check(r.returncode == 0 and f"{md}/good.json (distmm calibrate)" in r.stdout, f"P={ranks} a good machine file is read")
        r = run(ranks, ["--size", "16"], d, env=dict(base_env, DISTMM_MACHINE_FILE=f"{md}/none.json"))
        check(r.returncode == 0 and "no distmm calibrate file" in r.stdout, f"P={ranks} no machine file: the defaults")

    # 7. calibrate without a usable HOME (and no DISTMM_MACHINE_FILE): an error saying what to
    # set, before any measurement, and nothing created (/.cache, ./.cache, the missing HOME).
    hd = f"{d}/homes"
    os.mkdir(hd)
    root_cache = os.path.exists("/.cache")
    unset = {k: v for k, v in base_env.items() if k != "HOME"}
    for ranks in (0, 2):
        for label, env, pattern in [("unset", unset, "HOME is not set"),
                                    ("empty", dict(base_env, HOME=""), "HOME is not set"),
                                    ("missing", dict(base_env, HOME=f"{hd}/nobody"), "is not an existing directory"),
                                    ("relative", dict(base_env, HOME="nobody"), "is not an absolute path"),
                                    ("a file", dict(base_env, HOME=f"{d}/A.npy"), "is not an existing directory")]:
            t0 = time.time()
            r = run(ranks, [], hd, env=env, sub="calibrate", timeout=60)
            check(refused(r, pattern) and "DISTMM_MACHINE_FILE" in error_lines(r)[0] and os.listdir(hd) == []
                  and os.path.exists("/.cache") == root_cache and time.time() - t0 < 30,
                  f"P={ranks} calibrate with HOME {label}: rc={r.returncode} {error_lines(r)} {os.listdir(hd)}")
        for target, pattern in [("/dev/null", "is a character device"), (f"{d}/fifo", "is a FIFO")]:
            r = run(ranks, ["--file", target], hd, sub="calibrate", timeout=60)
            check(refused(r, pattern) and kind(target) in ("chr", "fifo"), f"P={ranks} calibrate --file {target} refused")
    os.mkdir(f"{hd}/me")
    r = run(0, ["--threads", "1"], hd, env=dict(base_env, HOME=f"{hd}/me"), sub="calibrate", timeout=300)
    saved = f"{hd}/me/.cache/distmm/machine.json"
    check(r.returncode == 0 and os.path.exists(saved) and "latency_s" in open(saved).read(),
          f"calibrate with HOME set writes below it: rc={r.returncode} {error_lines(r)}")

    # 8. .npy headers: over 1 MiB (version 2.0) and unknown versions get their own messages;
    # good 2.0 and 3.0 files are read.
    nd = f"{d}/npy"
    os.mkdir(nd)
    small = rng.standard_normal((3, 3))
    dict_text = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 3), }"
    header = (dict_text + " " * (2 << 20)).encode()
    header = header[: (2 << 20) - 12 - 1] + b"\n"
    with open(f"{nd}/hugeheader.npy", "wb") as f:
        f.write(b"\x93NUMPY\x02\x00" + len(header).to_bytes(4, "little") + header + small.tobytes())
    for ver in ((2, 0), (3, 0)):
        with open(f"{nd}/v{ver[0]}.npy", "wb") as f:
            np.lib.format.write_array(f, small, version=ver)
    np.save(f"{nd}/v1.npy", small)
    raw = bytearray(open(f"{nd}/v1.npy", "rb").read())
    for name, major, minor in [("v11", 1, 1), ("v40", 4, 0)]:
        raw[6], raw[7] = major, minor
        open(f"{nd}/{name}.npy", "wb").write(bytes(raw))
    for ranks in (0, 2):
        for name, pattern in [("hugeheader", f"has a header of {len(header)} bytes, over the 1 MiB distmm reads"),
                              ("v11", "is .npy format version 1.1: distmm reads versions 1.0, 2.0 and 3.0"),
                              ("v40", "is .npy format version 4.0: distmm reads versions 1.0, 2.0 and 3.0")]:
            r = run(ranks, ["--a", f"{nd}/{name}.npy", "--b", f"{nd}/v1.npy", "--out", f"{nd}/out.npy"], d)
            check(refused(r, pattern), f"P={ranks} {name}: rc={r.returncode} {error_lines(r)}")
        for name in ("v2", "v3"):
            r = run(ranks, ["--a", f"{nd}/{name}.npy", "--b", f"{nd}/v1.npy", "--out", f"{nd}/out.npy"], d)
            check(r.returncode == 0 and np.allclose(np.load(f"{nd}/out.npy"), small @ small),
                  f"P={ranks} format {name} read: rc={r.returncode} {error_lines(r)}")

    # 9. run --json - writes the JSON line to standard output (as plan does), no file named "-".
    for ranks in (0, 2):
        r = run(ranks, ["--size", "24", "--json", "-"], d)
        lines = r.stdout.strip().splitlines()
        try:
            rec = json.loads(lines[-1]) if len(lines) == 1 else {}
        except ValueError:
            rec = {}
        check(r.returncode == 0 and rec.get("passed") is True and rec.get("m") == 24 and not os.path.exists(f"{d}/-"),
              f"P={ranks} run --json - to standard output: rc={r.returncode} {r.stdout[-300:]}")

finish()
