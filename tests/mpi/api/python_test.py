"""The Python package distmm (src/python/distmm) under mpirun, against NumPy: every dtype, every
op pair (N, T, C), A, B and C in block-cyclic, row or column slabs, one block per rank or explicit
blocks in a flat buffer, C- and F-order (and padded) arrays, a plan executed twice, and errors
(a bad layout, one rank's wrong shape, a GPU array on one rank, a bad option) raised on every
rank with the same message. GPU arrays: host memory shown through __cuda_array_interface__
(distmm.DeviceView) with the option emulate_device=1 runs the device path on the emulated device, taken
without copies, and host and GPU arrays mixed (the host ones staged through the device); on a GPU machine DISTMM_TEST_CUPY=1 runs the same cases on CuPy arrays and
DISTMM_TEST_TORCH=1 on PyTorch CUDA tensors (through __cuda_array_interface__, and through DLPack alone). Inputs are small integers: every element is checked exactly.
Run: PYTHONPATH=build/python mpirun -n 4 python3 tests/mpi/api/python_test.py"""
import sys

import numpy as np
from mpi4py import MPI

import distmm

comm = MPI.COMM_WORLD
P, me = comm.Get_size(), comm.Get_rank()
failures = []
cases = 0


def fail(what):
    failures.append(what)


def grid(p):
    r = max(d for d in range(1, int(p ** 0.5) + 1) if p % d == 0)
    return r, p // r


def starts(sizes):
    return [sum(sizes[:r]) for r in range(len(sizes))]


# Layout makers: (layout, index rows of this rank, index cols) for an m x n matrix, variant v.
def make(kind, m, n, v):
    if kind == "bc":
        nprow, npcol = grid(P) if v % 2 == 0 else grid(P)[::-1]
        mb, nb, rsrc, csrc = 2 + v % 2, 3 - v % 2, v % nprow, (v + 1) % npcol
        go = "row" if v % 3 else "col"
        lay = distmm.BlockCyclic(m, n, mb, nb, nprow, npcol, rsrc, csrc, go)
        if me >= nprow * npcol:
            return lay, [], []
        prow, pcol = divmod(me, npcol) if go == "row" else divmod(me, nprow)[::-1]
        rows = [g for g in range(m) if (rsrc + g // mb) % nprow == prow]
        cols = [g for g in range(n) if (csrc + g // nb) % npcol == pcol]
        return lay, rows, cols
    if kind in ("rows", "cols"):
        total = m if kind == "rows" else n
        sizes = distmm.even_sizes(total, P) if v % 2 == 0 else [total // P + (r >= P - total % P) for r in range(P)]
        s = starts(sizes)[me]
        idx = list(range(s, s + sizes[me]))
        if kind == "rows":
            return distmm.RowSlabs(m, n, sizes if v % 2 else None), idx, list(range(n))
        return distmm.ColSlabs(m, n, sizes), list(range(m)), idx
    # "block": a pr x pc grid of blocks dealt to the ranks in reverse
    pr, pc = grid(P)
    rs, cs = distmm.even_sizes(m, pr), distmm.even_sizes(n, pc)
    blocks = []
    for r in range(P):
        i, j = divmod(P - 1 - r, pc)
        blocks.append(distmm.Block(starts(rs)[i], starts(cs)[j], rs[i], cs[j], owner=r))
    b = blocks[me]
    lay = distmm.Blocks(m, n, blocks if v % 2 else [distmm.Block(b.row, b.col, b.rows, b.cols)])
    return lay, list(range(b.row, b.row + b.rows)), list(range(b.col, b.col + b.cols))


def local(X, rows, cols, order, pad=False):
    x = X[np.ix_(rows, cols)] if rows and cols else np.zeros((len(rows), len(cols)), X.dtype)
    if pad:  # a slice of a larger array: one unit stride, a padded leading dimension
        big = np.full((x.shape[0] + 2, x.shape[1] + 3), -7, X.dtype, order=order)
        big[:x.shape[0], :x.shape[1]] = x
        return big[:x.shape[0], :x.shape[1]]
    return np.array(x, order=order)


def explicit_blocks(X, m, n, v, dtype):
    """Every rank two blocks (its block's columns split) in one flat buffer, one 'F' with a padded
    ld, one 'C', at offsets: Blocks with explicit storage."""
    _, rows, cols = make("block", m, n, v)
    h = len(cols) // 2
    parts = [(rows, cols[:h], "F"), (rows, cols[h:], "C")]
    buf = np.full(4 + sum((len(r) + 1) * len(c) + len(r) * len(c) for r, c, _ in parts), -5, dtype)
    mine, at = [], 2
    for r, c, o in parts:
        if not r or not c:
            continue
        blk = X[np.ix_(r, c)]
        ld = len(r) + 1 if o == "F" else len(c)
        for i in range(len(r)):
            for j in range(len(c)):
                buf[at + (i + j * ld if o == "F" else i * ld + j)] = blk[i, j]
        mine.append((distmm.Block(r[0], c[0], len(r), len(c), offset=at, ld=ld, order=o), r, c, ld, o, at))
        at += ld * (len(c) if o == "F" else len(r))
    return distmm.Blocks(m, n, [x[0] for x in mine]), buf, mine


def values(shape, seed, dtype):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, size=shape).astype(dtype)
    if np.iscomplexobj(x):
        x += 1j * rng.integers(-3, 4, size=shape)
    return x


def opx(X, o):
    return X if o == "N" else X.T if o == "T" else X.conj().T


KINDS = ["bc", "rows", "cols", "block", "flat"]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]



CUPY = TORCH = None
_env = __import__("os").environ
if _env.get("DISTMM_TEST_CUPY") == "1":
    import cupy as CUPY  # noqa: N812
    CUPY.cuda.Device(me % CUPY.cuda.runtime.getDeviceCount()).use()  # one GPU per rank
if _env.get("DISTMM_TEST_TORCH") == "1":
    import torch as TORCH  # noqa: N812
    TORCH.cuda.set_device(me % TORCH.cuda.device_count())


class DLPackOnly:
    """A GPU tensor seen through DLPack alone (no __cuda_array_interface__)."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, *args, **kwargs):
        return self.t.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def to_device(x, mode):
    """x as the test's memory `mode`: None (host), "emulated" (distmm.DeviceView), "cupy" (a CuPy copy, same strides)."""
    if mode == "emulated":
        return distmm.DeviceView(x)
    if mode == "cupy":  # the cases' arrays are tight: the same strides on the GPU
        return CUPY.asarray(x, order="F" if x.flags.f_contiguous and not x.flags.c_contiguous else "C")
    if mode in ("torch", "dlpack"):  # .cuda() keeps a dense tensor's strides
        t = TORCH.from_numpy(x).cuda()
        TORCH.cuda.synchronize()
        return t if mode == "torch" else DLPackOnly(t)
    return x


def back(d, x, mode):
    if mode == "cupy":
        x[...] = CUPY.asnumpy(d)
    if mode in ("torch", "dlpack"):
        x[...] = (d if mode == "torch" else d.t).cpu().numpy()


def one_case(dtype, oa, ob, ka, kb, kc, order, v, m=7, n=5, k=9, pad=False, check_no_copy=False, device=None,
             on="abc"):
    """on: the matrices given as `device` arrays (the others stay NumPy arrays: mixed memories)."""
    global cases
    cases += 1
    A = values((m, k) if oa == "N" else (k, m), 10 + v, dtype)
    B = values((k, n) if ob == "N" else (n, k), 20 + v, dtype)
    C0 = values((m, n), 30 + v, dtype)
    ordr = {"C": ["C", "C", "C"], "F": ["F", "F", "F"], "mix": ["C", "F", "C"], "mix2": ["F", "C", "F"]}[order]

    def arr(X, kind, o, vv):
        if kind == "flat":
            lay, buf, info = explicit_blocks(X, X.shape[0], X.shape[1], vv, dtype)
            return lay, buf, info
        lay, rows, cols = make(kind, X.shape[0], X.shape[1], vv)
        return lay, local(X, rows, cols, o, pad), (rows, cols)

    la, a, _ = arr(A, ka, ordr[0], v)
    lb, b, _ = arr(B, kb, ordr[1], v + 1)
    lc, c, cinfo = arr(C0, kc, ordr[2], v + 2)
    alpha, beta = (2, -1) if not np.iscomplexobj(A) else (1 - 2j, 1j)
    want = alpha * (opx(A, oa) @ opx(B, ob)) + beta * C0
    a0, b0 = a.copy(), b.copy()
    tag = "%s %s%s A %s B %s C %s %s v%d%s" % (np.dtype(dtype).name, oa, ob, ka, kb, kc, order, v,
                                             " on " + device + ("" if on == "abc" else " (%s only)" % on)
                                             if device else "")
    modes = [device if x in on else None for x in "abc"]
    da, db, dc = (to_device(x, mo) for x, mo in zip((a, b, c), modes))
    try:
        plan = distmm.Plan(da, db, dc, layout=(la, lb, lc), trans_a=oa, trans_b=ob,
                           options="emulate_device=1" if device == "emulated" else None)
        if check_no_copy and plan._copied != [False, False]:
            fail(tag + ": an input was copied")
        plan.execute(da, db, dc, alpha=alpha, beta=beta)
        plan.execute(da, db, dc, alpha=0, beta=1)  # a second run on the same plan: c unchanged
        plan.close()
        back(da, a, modes[0]), back(db, b, modes[1]), back(dc, c, modes[2])
    except distmm.Error as e:
        fail(tag + ": raised " + str(e))
        return
    if not (np.array_equal(a, a0) and np.array_equal(b, b0)):
        fail(tag + ": an input was written")
    if kc == "flat":
        got_ok = True
        for blk, r, cc, ld, o, at in cinfo:
            for i in range(len(r)):
                for j in range(len(cc)):
                    got_ok &= c[at + (i + j * ld if o == "F" else i * ld + j)] == want[r[i], cc[j]]
    else:
        rows, cols = cinfo
        got_ok = np.array_equal(c, want[np.ix_(rows, cols)]) if rows and cols else True
    if not got_ok:
        fail(tag + ": wrong C")


def agreed_error(fn, cls, what):
    """fn() must raise cls on every rank with one message."""
    global cases
    cases += 1
    msg = None
    try:
        fn()
    except distmm.Error as e:
        msg = (type(e).__name__, str(e))
        if not isinstance(e, cls):
            fail(what + ": raised %s, not %s: %s" % (type(e).__name__, cls.__name__, e))
    msgs = comm.allgather(msg)
    if any(x is None for x in msgs):
        fail(what + ": not raised on every rank: %s" % msgs)
    elif len(set(msgs)) != 1:
        fail(what + ": different messages: %s" % msgs)
    return msg


rng = np.random.default_rng(7)
# every dtype and op pair, the layout kinds and orders drawn (seeded: every rank draws the same)
for dtype in DTYPES:
    for oa in "NTC":
        for ob in "NTC":
            ka, kb, kc = rng.choice(KINDS, 3)
            one_case(dtype, oa, ob, ka, kb, kc, rng.choice(["C", "F", "mix", "mix2"]), int(rng.integers(0, 6)))
# every kind for each matrix, in both orders
for i, kind in enumerate(KINDS):
    for order in ("C", "F"):
        one_case(np.float64, "N", "T", kind, KINDS[(i + 1) % 5], KINDS[(i + 2) % 5], order, i)
        one_case(np.complex128, "C", "N", KINDS[(i + 3) % 5], kind, KINDS[(i + 4) % 5], order, i + 1)
# C-order and F-order arrays on block-cyclic layouts need no copy (C^T = B^T A^T), padded slices too
for order in ("C", "F"):
    for oa, ob in (("N", "N"), ("T", "N"), ("N", "T")):
        one_case(np.float64, oa, ob, "bc", "bc", "bc", order, 3, check_no_copy=True)
    one_case(np.complex64, "C", "C", "rows", "cols", "bc", order, 2, pad=True)
# odd shapes down to 1
for m, n, k in ((1, 1, 1), (1, 6, 3), (8, 1, 1), (3, 2, 11)):
    one_case(np.float64, "N", "N", "bc", "rows", "cols", "C", 0, m, n, k)
    one_case(np.complex128, "T", "C", "cols", "block", "rows", "F", 1, m, n, k)

# GPU arrays, without copies: every dtype and op pair on the emulated device (or CuPy's GPU arrays)
for mode in ["emulated"] + (["cupy"] if CUPY is not None else []) + (["torch", "dlpack"] if TORCH is not None else []):
    for dtype in DTYPES:
        for oa in "NTC":
            for ob in "NTC":
                ka, kb, kc = rng.choice(KINDS, 3)
                one_case(dtype, oa, ob, ka, kb, kc, "F", int(rng.integers(0, 6)), device=mode)
    for i, kind in enumerate(KINDS):
        one_case(np.float64, "N", "T", kind, KINDS[(i + 1) % 5], KINDS[(i + 2) % 5], "F", i, device=mode)
    # host and GPU arrays mixed: each of the six mixes, real and complex, the host ones staged
    for on in ("a", "b", "c", "ab", "ac", "bc"):
        for dtype, oa, ob in ((np.float64, "N", "T"), (np.complex128, "C", "N")):
            ka, kb, kc = rng.choice(KINDS, 3)
            one_case(dtype, oa, ob, ka, kb, kc, rng.choice(["C", "F"]), int(rng.integers(0, 6)), device=mode, on=on)

# a GPU array whose strides would need a copy is refused, not copied (a C-ordered block-cyclic A under "C")
A2 = values((5, 4), 3, np.complex128)
la2, ra2, ca2 = make("bc", 5, 4, 0)
lb2, rb2, cb2 = make("rows", 5, 3, 0)
lc2, rc2, cc2 = make("cols", 4, 3, 0)
agreed_error(lambda: distmm.matmul(distmm.DeviceView(local(A2, ra2, ca2, "C")), distmm.DeviceView(local(values((5, 3), 4, np.complex128), rb2,
                                                                                   cb2, "F")),
                                   distmm.DeviceView(np.zeros((4, len(cc2)), np.complex128, order="F")), layout=(la2, lb2, lc2),
                                   trans_a="C", options="emulate_device=1"),
             distmm.ArgumentError, "GPU array needing a copy")

# matmul allocates C (C-order for C-order inputs) and equals NumPy's product
A, B = values((9, 4), 1, np.float64), values((4, 6), 2, np.float64)
la, ra, ca = make("rows", 9, 4, 0)
lb, rb, cb = make("bc", 4, 6, 1)
lc, rc, cc = make("cols", 9, 6, 0)
c = distmm.matmul(np.ascontiguousarray(A[ra]), local(B, rb, cb, "C"), layout=(la, lb, lc), comm=comm)
cases += 1
if not (c.flags.c_contiguous and np.array_equal(c, (A @ B)[np.ix_(rc, cc)])):
    fail("matmul: wrong or not C-order")

# errors, raised on every rank with the same message
a = local(A, ra, ca, "F")
b = local(B, rb, cb, "F")
cl = np.zeros((9, len(cc)), order="F")
bad_rows = distmm.RowSlabs(9, 4, [1] * P)  # sizes that do not add up to 9 (P < 9)
if P < 9:
    msg = agreed_error(lambda: distmm.Plan(a[:1], b, cl, layout=(bad_rows, lb, lc)),
                       distmm.LayoutError, "bad layout")
wrong = a if me != P - 1 else np.zeros((a.shape[0] + 1, a.shape[1]))
agreed_error(lambda: distmm.matmul(wrong, b, cl, layout=(la, lb, lc)), distmm.ArgumentError, "one rank's wrong shape")


if P > 1:  # (at one rank, a GPU array on rank 0 is host and GPU arrays mixed)
    gpu = distmm.DeviceView(a) if me == 0 else a
    msg = agreed_error(lambda: distmm.matmul(gpu, b, cl, layout=(la, lb, lc), options="emulate_device=1"),
                       distmm.DeviceMemoryError, "GPU array on one rank")
    if msg and "in GPU memory on some ranks" not in msg[1]:
        fail("GPU array on one rank: message does not say so: " + msg[1])
# host and GPU arrays mixed are taken (C staged through the device), matmul included
cm = distmm.matmul(distmm.DeviceView(a), distmm.DeviceView(b), np.zeros((9, len(cc)), order="F"), layout=(la, lb, lc),
                   options="emulate_device=1")
cases += 1
if not np.array_equal(cm, (A @ B)[:, cc]):
    fail("host and GPU arrays mixed: wrong C")
if not distmm.device_support():
    msg = agreed_error(lambda: distmm.matmul(distmm.DeviceView(a), b, cl, layout=(la, lb, lc)), distmm.DeviceMemoryError,
                       "a GPU array without CUDA")
    if msg and "A is in GPU memory but this build of distmm has no CUDA" not in msg[1]:
        fail("a GPU array without CUDA: message does not say so: " + msg[1])
msg = agreed_error(lambda: distmm.matmul(distmm.DeviceView(a), distmm.DeviceView(b), distmm.DeviceView(cl), layout=(la, lb, lc),
                                         options="engine=blas"), distmm.DeviceMemoryError, "GPU arrays, host engine")
if msg and ("computes on the host" if distmm.device_support() else "has no CUDA") not in msg[1]:
    fail("GPU arrays with a host engine: message does not say why: " + msg[1])
agreed_error(lambda: distmm.matmul(a, b, cl, layout=(la, lb, lc), options="algorithm=nope"), distmm.UsageError,
             "unknown algorithm")
agreed_error(lambda: distmm.matmul(a.astype(np.float32), b, cl, layout=(la, lb, lc)), distmm.ArgumentError,
             "mixed dtypes")
# the accuracy target per call: a bad one is a usage error naming the fix; a good one is taken
# (by every engine; the INT8-emulated ones read it)
msg = agreed_error(lambda: distmm.matmul(a, b, cl, layout=(la, lb, lc), accuracy="fast"), distmm.UsageError,
                   "bad accuracy")
if msg and "accuracy=fast: use native, max or a relative error" not in msg[1]:
    fail("bad accuracy: message does not name the fix: " + msg[1])
ca = distmm.matmul(a, b, np.zeros((9, len(cc)), order="F"), layout=(la, lb, lc), accuracy=1e-10)
cases += 1
if not np.allclose(ca, (A @ B)[:, cc]):
    fail("accuracy=1e-10: wrong C")
agreed_error(lambda: distmm.matmul(a, b, cl, layout=(la, lb, lc), trans_a="X"), distmm.ArgumentError, "bad op")
# after the errors, the communicator still works: one more multiply
c2 = distmm.matmul(a, b, np.zeros((9, len(cc)), order="F"), layout=(la, lb, lc))
cases += 1
if not np.array_equal(c2, (A @ B)[:, cc]):
    fail("multiply after errors: wrong C")

all_failures = comm.gather(failures, root=0)
if me == 0:
    flat = [f for r, fs in enumerate(all_failures) for f in ("rank %d: %s" % (r, x) for x in fs)]
    for f in flat[:40]:
        print("FAIL", f)
    print("python_test: %d ranks, %d cases: %s" % (P, cases, "ok" if not flat else "%d FAILED" % len(flat)))
ok = comm.bcast(not flat if me == 0 else None, root=0)
sys.exit(0 if ok else 1)
