"""distmm from Python on GPU arrays: C = A B (m = n = k = N) with CuPy arrays, one rank per GPU,
in the layout of the algorithm distmm's CLI runs and in the layouts users hold; planned once,
executed R times. Run under mpirun (one rank per GPU, each on GPU = its local rank):

    PYTHONPATH=build-dev/python mpirun -n 4 python3 jobs/bench_python_gpu.py --n 32768
    PYTHONPATH=build/python mpirun -n 2 python3 jobs/bench_python_gpu.py --host --n 300   # NumPy, host
    ... --host --emulate-device: NumPy arrays shown as GPU arrays (__cuda_array_interface__), run
    through the device path on the emulated device (option emulate_device=1): not for timing

Layouts (--layouts, each rank's array its own part of A, B and C; default auto: blocks and rows,
and rows-f where rows is the algorithm's own layout, i.e. on a 1 x P grid):
  blocks    the 2-D blocks of SUMMA's pr x pc grid (the grid distmm picks: pr * pc = P minimising
            k (m pc + n pr) / P, the first such pr; rank = i pc + j), split as distmm splits
            (the first N % parts one larger): A(i, j) = rows part i of m over pr by part j of k
            over pc, B(i, j) = part i of k over pr by part j of n over pc, C(i, j) = part i of m
            by part j of n. Fortran-order arrays: the algorithm's own pieces in column-major
            storage, so the plan uses A, B and C in place (plan.in_place says so) and moves nothing.
  blocks-c  the same blocks in C order: the plan computes C^T = B^T A^T, whose pieces are not
            these (unless the grid is square and pr = pc), so they are redistributed.
  rows      row slabs of A, B and C (rank r: rows even_sizes(N, P)[r]), C order: NumPy's and
            CuPy's default, the common user layout. The plan computes C^T = B^T A^T, where these
            are column slabs of B^T, A^T and C^T: on a 1 x P grid (distmm's grid for P = 2)
            SUMMA's own pieces, used in place; on any other grid redistributed on every execute.
  rows-f    row slabs in Fortran order: redistributed at every P > 1.
Each case: the plan (timed), 1 warm-up execute (--warmup) and 10 timed ones (--repeat, even by
default: GPUs at their power cap throttle in swings, docs/performance.md), each timed from an MPI
barrier to the device synchronized, the maximum over the ranks; the median reported. The result
is checked once (Freivalds: C x against A (B x) for a random x, in float64, the ranks' parts
summed with MPI): relative error |C x - A (B x)| / (|A|_F |B|_F |x|) within 64 eps(dtype) / sqrt(k)
(a correct product: about eps / sqrt(n); a wrong quarter of C: about 1 / n).
Output, on rank 0: one line `bench-python {json}` per case and a line for people; --json FILE
also appends the JSON objects to FILE. Exit status 1 where a check failed or the blocks layout was
not used in place (an algorithm other than SUMMA's, or a change in distmm's grid).
"""
import argparse
import json
import math
import os
import sys
import time

from bench_grid import grid_2d  # (this folder is on sys.path: the script's own)

import numpy as np
from mpi4py import MPI

try:
    import distmm
except ImportError as e:  # noqa: F841
    sys.exit("bench_python_gpu.py: cannot import distmm (%s): set PYTHONPATH to the build's python folder, "
             "e.g. PYTHONPATH=build-dev/python" % e)

DTYPES = {"f64": np.float64, "f32": np.float32}
LAYOUTS = ("blocks", "blocks-c", "rows", "rows-f")




def part(n, parts, i):
    """(start, size) of part i of n split as distmm's Partition1D splits it."""
    s = distmm.even_sizes(n, parts)
    return sum(s[:i]), s[i]


def pieces(layout, P, rank, m, n, k):
    """This rank's part of A (m x k), B (k x n), C (m x n) as (row0, rows, col0, cols), the distmm
    layouts, and the array order."""
    if layout.startswith("blocks"):
        pr, pc = grid_2d(P, m, n)
        if rank >= pr * pc:  # not reached: pr pc = P
            raise SystemExit("bench_python_gpu.py: rank %d outside the %dx%d grid" % (rank, pr, pc))
        i, j = divmod(rank, pc)
        pm, pka, pkb, pn = part(m, pr, i), part(k, pc, j), part(k, pr, i), part(n, pc, j)
        boxes = [(pm[0], pm[1], pka[0], pka[1]), (pkb[0], pkb[1], pn[0], pn[1]), (pm[0], pm[1], pn[0], pn[1])]
        lays = [distmm.Blocks(r, c, [distmm.Block(box[0], box[2], box[1], box[3])])
                for (r, c), box in zip(((m, k), (k, n), (m, n)), boxes)]
        order = "F" if layout == "blocks" else "C"
        return boxes, lays, order, "%dx%d" % (pr, pc)
    boxes, lays = [], []
    for r, c in ((m, k), (k, n), (m, n)):
        s0, sz = part(r, P, rank)
        boxes.append((s0, sz, 0, c))
        lays.append(distmm.RowSlabs(r, c))
    return boxes, lays, ("C" if layout == "rows" else "F"), "%dx%d" % grid_2d(P, m, n)



class Backend:
    """NumPy on the host, or CuPy on this rank's GPU."""

    def __init__(self, host, comm):
        self.host = host
        if host:
            self.xp = np
            self.device = "host (NumPy)"
            return
        try:
            import cupy
        except ImportError as e:
            raise SystemExit("bench_python_gpu.py: cannot import cupy (%s): run with --host for NumPy arrays" % e)
        self.xp = cupy
        local = comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()
        ndev = cupy.cuda.runtime.getDeviceCount()
        cupy.cuda.Device(local % ndev).use()  # one GPU per rank: GPU = local rank
        props = cupy.cuda.runtime.getDeviceProperties(local % ndev)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        self.device = "GPU %d of %d (%s), CuPy %s" % (local % ndev, ndev, name, cupy.__version__)

    def sync(self):
        if not self.host:
            self.xp.cuda.Device().synchronize()

    def free(self):
        """CuPy's pool gives its free blocks back, so that the plan sees the GPU's real free memory."""
        if not self.host:
            self.sync()
            self.xp.get_default_memory_pool().free_all_blocks()

    def random(self, shape, dtype, order, seed):
        """Uniform [-1, 1) of this shape, C- or Fortran-ordered, made where the array lives."""
        xp = self.xp
        rows, cols = shape
        gen_shape = (rows, cols) if order == "C" else (cols, rows)
        x = xp.random.default_rng(seed).random(gen_shape, dtype=dtype)
        x *= 2
        x -= 1
        return x if order == "C" else x.T

    def zeros(self, shape, dtype, order):
        return self.xp.zeros(shape, dtype=dtype, order=order)

    def host_vector(self, v):
        return v if self.host else self.xp.asnumpy(v)


def chunks(M):
    """Row ranges of M of about 32 Mi elements each (the float64 copies of the check stay small)."""
    rows, cols = M.shape
    step = max(1, (1 << 25) // max(1, cols))
    return [(s, min(rows, s + step)) for s in range(0, rows, step)]


def matvec(be, M, v):
    """M v in float64, chunked."""
    out = be.xp.zeros(M.shape[0], dtype=np.float64)
    if M.size:
        for s, e in chunks(M):
            out[s:e] = M[s:e].astype(np.float64) @ v
    return out


def sumsq(be, M):
    t = 0.0
    if M.size:
        for s, e in chunks(M):
            t += float((M[s:e].astype(np.float64) ** 2).sum())
    return t


def freivalds(be, comm, arrays, boxes, m, n, k, dtype, seed):
    """|C x - A (B x)| / (|A|_F |B|_F |x|) with x random, every rank's parts summed over MPI."""
    a, b, c = arrays
    (ar0, anr, ac0, anc), (br0, bnr, bc0, bnc), (cr0, cnr, cc0, cnc) = boxes
    x = np.random.default_rng(seed).random(n) * 2 - 1  # the same on every rank
    xd = be.xp.asarray(x)

    def summed(length, r0, local):
        full = np.zeros(length)
        full[r0:r0 + local.shape[0]] = be.host_vector(local)
        comm.Allreduce(MPI.IN_PLACE, full, op=MPI.SUM)
        return full

    y = summed(k, br0, matvec(be, b, xd[bc0:bc0 + bnc]))  # B x
    z = summed(m, ar0, matvec(be, a, be.xp.asarray(y)[ac0:ac0 + anc]))  # A (B x)
    w = summed(m, cr0, matvec(be, c, xd[cc0:cc0 + cnc]))  # C x
    na, nb = comm.allreduce(sumsq(be, a)), comm.allreduce(sumsq(be, b))
    scale = math.sqrt(na) * math.sqrt(nb) * float(np.linalg.norm(x))
    rel = float(np.linalg.norm(w - z)) / scale if scale else 0.0
    # A correct product's error is about eps / sqrt(n) of this scale (rounding errors of random
    # signs); a wrong block of C gives about 1 / n. 64 eps / sqrt(k) lies between, far from both.
    tol = 64 * float(np.finfo(dtype).eps) / math.sqrt(max(k, 1))
    return rel, tol


def run_case(be, comm, args, dname, layout):
    P, rank = comm.Get_size(), comm.Get_rank()
    n = m = k = args.n
    dtype = DTYPES[dname]
    boxes, lays, order, grid = pieces(layout, P, rank, m, n, k)
    seed = args.seed + 7919 * rank
    be.free()
    a = be.random((boxes[0][1], boxes[0][3]), dtype, order, seed)
    b = be.random((boxes[1][1], boxes[1][3]), dtype, order, seed + 1)
    c = be.zeros((boxes[2][1], boxes[2][3]), dtype, order)
    be.sync()
    options = "algorithm=%s" % args.algo
    if args.host:
        options += " engine=blas"
    if args.emulate_device:
        options += " emulate_device=1"
    if args.options:
        options += " " + args.options
    # what distmm is given: the arrays (CuPy's on the GPU), or views that show host memory as GPU arrays
    da, db, dc = (distmm.DeviceView(x) for x in (a, b, c)) if args.emulate_device else (a, b, c)
    comm.Barrier()
    t0 = MPI.Wtime()
    plan = distmm.Plan(da, db, dc, layout=tuple(lays), comm=comm, options=options)
    plan_s = comm.allreduce(MPI.Wtime() - t0, op=MPI.MAX)
    in_place = plan.in_place
    ip_all = {key: bool(comm.allreduce(int(v), op=MPI.MIN)) for key, v in in_place.items()}
    times = []
    for it in range(args.warmup + args.repeat):
        comm.Barrier()
        t0 = MPI.Wtime()
        plan.execute(da, db, dc)
        be.sync()
        dt = comm.allreduce(MPI.Wtime() - t0, op=MPI.MAX)
        if it >= args.warmup:
            times.append(dt)
    rec = {"bench": "python", "ranks": P, "dtype": dname, "n": n, "layout": layout, "order": order,
           "memory": "emulated device" if args.emulate_device else "host" if args.host else "device",
           "algorithm": plan.algorithm, "grid": grid,
           "options": options, "in_place": ip_all, "moved_max": plan.moved_max, "moved_total": plan.moved_total,
           "plan_memory_bytes": plan.memory_bytes, "plan_seconds": plan_s, "warmup": args.warmup,
           "times": times, "time_median": float(np.median(times)) if times else None,
           "time_mean": float(np.mean(times)) if times else None,
           "tflops": (2.0 * m * n * k / float(np.median(times)) / 1e12) if times else None,
           "transposed": bool(plan.transposed), "device": be.device}
    plan.close()
    if not args.no_check:
        rel, tol = freivalds(be, comm, (a, b, c), boxes, m, n, k, dtype, args.seed + 12345)
        rec["check"] = {"kind": "freivalds", "rel_error": rel, "tol": tol, "ok": bool(rel <= tol)}
    del a, b, c, da, db, dc
    be.free()
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=32768, help="m = n = k (default 32768)")
    ap.add_argument("--dtypes", nargs="+", default=["f64", "f32"], choices=sorted(DTYPES))
    ap.add_argument("--layouts", nargs="+", default=["auto"], choices=LAYOUTS + ("auto",),
                    help="default auto: blocks and rows, and rows-f where rows is the algorithm's layout "
                    "(a 1 x P grid), so that a layout that is not is measured at every P")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--algo", default="summa", help="the plan's algorithm option (default summa: the "
                    "blocks layout is SUMMA's; the CLI run to compare with must name the same)")
    ap.add_argument("--options", default="", help="more plan options (e.g. relabel=0)")
    ap.add_argument("--host", action="store_true", help="NumPy arrays on the host (engine blas): a smoke test")
    ap.add_argument("--emulate-device", action="store_true", help="with --host: the arrays shown as GPU arrays, "
                    "run through the device path on the emulated device (a test of that path, not for timing)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--no-check", action="store_true", help="skip the Freivalds check")
    ap.add_argument("--json", help="append the JSON lines to this file too")
    ap.add_argument("--tag", default="", help="a label copied into each JSON line (e.g. the round)")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if args.emulate_device and not args.host:
        raise SystemExit("bench_python_gpu.py: --emulate-device goes with --host")
    be = Backend(args.host, comm)
    if not args.host and not distmm.device_support():
        raise SystemExit("bench_python_gpu.py: this distmm build takes no GPU arrays (built without CUDA): "
                         "use a CUDA build, or --host")
    devices = comm.gather(be.device)
    if rank == 0:
        print("bench_python_gpu: %d ranks, n %d, %s; %s" % (comm.Get_size(), args.n, " ".join(args.dtypes),
                                                             "; ".join(sorted(set(devices)))), flush=True)
    layouts = []
    for lay in args.layouts:
        if lay == "auto":
            P = comm.Get_size()
            extra = ["rows-f"] if P > 1 and grid_2d(P, args.n, args.n)[0] == 1 else []
            lay = ["blocks", "rows"] + extra
        else:
            lay = [lay]
        layouts += [x for x in lay if x not in layouts]
    bad = 0
    for dname in args.dtypes:
        for layout in layouts:
            rec = run_case(be, comm, args, dname, layout)
            if args.tag:
                rec["tag"] = args.tag
            if rank != 0:
                continue
            line = json.dumps(rec, sort_keys=True)
            print("bench-python " + line, flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(line + "\n")
            ip = "".join(x.upper() for x in "abc" if rec["in_place"][x]) or "none"
            mv = rec["moved_max"]
            chk = rec.get("check")
            ck = "not checked" if not chk else "check %.2e (tol %.1e) %s" % (
                chk["rel_error"], chk["tol"], "ok" if chk["ok"] else "FAILED")
            ts = rec["times"]
            print("python P=%d %s n=%d %-8s (%s-order%s): %s grid %s, in place: %s, moved max A/B/C %d/%d/%d; plan "
                  "%.3f s; median %.4f s (%d runs %.4f-%.4f), %.1f TFLOP/s; %s"
                  % (rec["ranks"], dname, args.n, layout, rec["order"], ", as C^T = B^T A^T" if rec["transposed"] else "",
                     rec["algorithm"], rec["grid"], ip, mv["a"], mv["b"], mv["c"], rec["plan_seconds"],
                     rec["time_median"], len(ts), min(ts), max(ts), rec["tflops"], ck), flush=True)
            if chk and not chk["ok"]:
                bad += 1
            if layout == "blocks" and not all(rec["in_place"].values()):
                print("bench_python_gpu: the blocks layout is not used in place (%s): it is not the pieces of "
                      "the algorithm that ran (%s); its times are not the matching layout's" % (ip, rec["algorithm"]),
                      flush=True)
                bad += 1
    bad = comm.bcast(bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
