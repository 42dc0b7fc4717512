"""distmm from Python (issue #41): multiply NumPy arrays distributed over MPI ranks, where they are.

    from mpi4py import MPI
    import numpy as np, distmm

    la = distmm.BlockCyclic(m, k, 64, 64, nprow, npcol)   # A as ScaLAPACK holds it
    lb = distmm.RowSlabs(k, n)                            # B: rank r holds a slab of rows
    lc = distmm.ColSlabs(m, n)                            # C: rank r holds a slab of columns
    c = distmm.matmul(a, b, layout=(la, lb, lc), comm=MPI.COMM_WORLD)   # collective

    plan = distmm.Plan(a, b, c, layout=(la, lb, lc))      # plan once (collective) ...
    plan.execute(a, b, c, alpha=2.0, beta=1.0)            # ... execute often: c = 2 a b + c
    plan.algorithm, plan.moved_max, plan.in_place, plan.memory_bytes

Each rank passes its own part as a NumPy array of the local shape (block-cyclic: ScaLAPACK's
local rows x columns; slabs: the slab; a single Block: the block), in C or Fortran order (or a
slice with one unit stride): the storage is read from the array, so nothing is transposed or
copied to call distmm. A C-order C is computed as C^T = B^T A^T in Fortran order, which is the
same memory. Blocks with explicit offset/ld/order take a flat buffer instead. float32, float64,
complex64 and complex128; trans_a/trans_b 'N', 'T' or 'C'. Every error (bad layouts, arrays of the
wrong shape or dtype, memories not taken) raises distmm.Error (a subclass per kind) on every rank of
the communicator with the same message: no rank is left waiting. The binding is ctypes over
libdistmm_c.so (the C API, src/distmm.h); the communicator goes to it as comm.py2f().

GPU arrays (CuPy, anything with __cuda_array_interface__, DLPack tensors on a CUDA device) are taken
as they are, without copies, where the library is built with CUDA (distmm.device_support()):
redistributed and multiplied on the GPUs (each rank's current device; NCCL between them). Host and
device arrays may be mixed: the library stages the host ones through the GPU. Device arrays with a
build without CUDA raise DeviceMemoryError. The arrays must be ready (their stream synchronized)
when execute() is called.
"""
import ctypes

import numpy as np

from . import _capi as _c

__all__ = ["matmul", "Plan", "BlockCyclic", "RowSlabs", "ColSlabs", "Blocks", "Block", "Error",
           "ArgumentError", "LayoutError", "UsageError", "DeviceMemoryError", "even_sizes", "device_support", "DeviceView"]


# ---- errors ----

class DeviceView:
    """A NumPy array shown as a GPU array (__cuda_array_interface__, as CuPy shows one), for the
    option emulate_device=1: a program's GPU path (device layouts, the redistribution and the
    algorithm's device schedule) run in host memory, where no GPU is. distmm reads the pointer,
    shape and strides and copies nothing; results land in the NumPy array."""

    def __init__(self, x):
        self.x = x
        self.__cuda_array_interface__ = {"shape": x.shape, "typestr": x.dtype.str, "version": 3,
                                         "data": (x.ctypes.data, False), "strides": x.strides}


class Error(Exception):
    """A distmm error, raised on every rank of the communicator with the same message."""

    def __init__(self, message, code=_c.ERR_INTERNAL):
        super().__init__(message)
        self.code = code


class ArgumentError(Error, ValueError):
    """A bad argument: an array of the wrong shape, dtype or strides, an unknown op."""


class LayoutError(Error, ValueError):
    """Layouts that do not describe the matrices, or do not fit together."""


class UsageError(Error, ValueError):
    """An option that does not fit: an unknown algorithm or engine, the rank count."""


class DeviceMemoryError(Error, TypeError):
    """Memories the library does not take: GPU arrays without CUDA, or on some ranks only."""


def device_support():
    """Whether this build of the library takes GPU (device) arrays."""
    return bool(_c.lib.distmm_device_support())


_CLASSES = {_c.ERR_ARGUMENT: ArgumentError, _c.ERR_LAYOUT: LayoutError, _c.ERR_USAGE: UsageError,
            _c.ERR_UNSUPPORTED: DeviceMemoryError}


def _raise(code):
    raise _CLASSES.get(code, Error)(_c.last_error(), code)


class _Local(Exception):
    """A problem one rank found; agreed on before anything is raised."""

    def __init__(self, message, code=_c.ERR_ARGUMENT):
        super().__init__(message)
        self.code = code


def _as_local(e):
    return e if isinstance(e, _Local) else _Local("distmm: %s: %s" % (type(e).__name__, e))


def _agree(fcomm, problem):
    """Collective: the lowest failing rank's problem raised on every rank."""
    code, msg = (problem.code, str(problem)) if problem else (_c.SUCCESS, "")
    st = _c.lib.distmm_agree_f(fcomm, code, msg.encode())
    if st != _c.SUCCESS:
        _raise(st)


def _comm(comm):
    if comm is None:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    return comm, comm.py2f(), comm.Get_size(), comm.Get_rank()


# ---- layouts: which global rows and columns each rank holds ----

def even_sizes(n, parts):
    """n split over parts as distmm splits it: the first n % parts one larger."""
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def _numroc(n, nb, p, src, np_):
    return sum(min(nb, n - g) for b, g in enumerate(range(0, n, nb)) if (src + b) % np_ == p)


class BlockCyclic:
    """ScaLAPACK's block-cyclic layout of an m x n matrix: mb x nb blocks on an nprow x npcol
    BLACS grid from process (rsrc, csrc), grid_order 'row' (rank = prow * npcol + pcol, BLACS's
    default) or 'col'. Ranks beyond the grid hold nothing. The local array: numroc rows x
    columns, either order (lld from its strides)."""

    def __init__(self, m, n, mb, nb, nprow, npcol, rsrc=0, csrc=0, grid_order="row"):
        self.m, self.n, self.mb, self.nb = int(m), int(n), int(mb), int(nb)
        self.nprow, self.npcol, self.rsrc, self.csrc = int(nprow), int(npcol), int(rsrc), int(csrc)
        if grid_order not in ("row", "col"):
            raise ValueError("distmm.BlockCyclic: grid_order must be 'row' or 'col'")
        self.grid_order = grid_order

    @classmethod
    def scalapack(cls, desc, nprow, npcol, grid_order="row"):
        """From a descinit_ descriptor (desc[2..7] = m, n, mb, nb, rsrc, csrc; lld comes from the array)."""
        return cls(desc[2], desc[3], desc[4], desc[5], nprow, npcol, desc[6], desc[7], grid_order)

    def transposed(self):
        return BlockCyclic(self.n, self.m, self.nb, self.mb, self.npcol, self.nprow, self.csrc, self.rsrc,
                           "col" if self.grid_order == "row" else "row")

    def local_shape(self, size, rank):
        if self.nprow < 1 or self.npcol < 1 or self.mb < 1 or self.nb < 1 or rank >= self.nprow * self.npcol:
            return (0, 0)
        if self.grid_order == "row":
            prow, pcol = divmod(rank, self.npcol)
        else:
            pcol, prow = divmod(rank, self.nprow)
        return (_numroc(self.m, self.mb, prow, self.rsrc, self.nprow),
                _numroc(self.n, self.nb, pcol, self.csrc, self.npcol))

    row_storage = False

    def _make(self, order, ld, size, rank):
        h = _c.handle()
        _c.lib.distmm_layout_block_cyclic(ctypes.byref(h), self.m, self.n, self.mb, self.nb, self.nprow,
                                          self.npcol, self.rsrc, self.csrc, ld,
                                          _c.GRID_ROW_MAJOR if self.grid_order == "row" else _c.GRID_COL_MAJOR)
        return h


class _Slabs:
    row_storage = True
    _rows = True  # row slabs (or column slabs)

    def __init__(self, m, n, sizes=None):
        self.m, self.n = int(m), int(n)
        self.sizes = None if sizes is None else [int(s) for s in sizes]

    def _sizes(self, size):
        return self.sizes if self.sizes is not None else even_sizes(self.m if self._rows else self.n, size)

    def transposed(self):
        return (ColSlabs if self._rows else RowSlabs)(self.n, self.m, self.sizes)

    def local_shape(self, size, rank):
        s = self._sizes(size)
        mine = s[rank] if rank < len(s) else 0
        return (mine, self.n) if self._rows else (self.m, mine)

    def _make(self, order, ld, size, rank):
        s = self._sizes(size)
        arr = (_c.index_t * max(1, len(s)))(*s)
        h = _c.handle()
        f = _c.lib.distmm_layout_row_slabs if self._rows else _c.lib.distmm_layout_col_slabs
        f(ctypes.byref(h), self.m, self.n, len(s), arr, ld, order)
        return h


class RowSlabs(_Slabs):
    """Rank r holds rows [sum(sizes[:r]), + sizes[r]) of the m x n matrix (sizes None: even)."""


class ColSlabs(_Slabs):
    """Rank r holds columns [sum(sizes[:r]), + sizes[r]) of the m x n matrix (sizes None: even)."""

    _rows = False


class Block:
    """One block: global (row, col), rows x cols, held by `owner` (-1: the rank passing it).
    offset/ld/order None: the rank's one block is its 2-D array (storage read from it); given:
    the rank's array is a flat buffer, the block at element `offset`, leading dimension ld (0:
    tight), order 'F' (column-major) or 'C' (row-major)."""

    def __init__(self, row, col, rows, cols, owner=-1, offset=None, ld=None, order=None):
        self.row, self.col, self.rows, self.cols, self.owner = int(row), int(col), int(rows), int(cols), int(owner)
        self.offset, self.ld, self.order = offset, ld, order

    @property
    def explicit(self):
        return self.offset is not None or self.ld is not None or self.order is not None

    def transposed(self):
        order = None if self.order is None else ("C" if self.order == "F" else "F")
        return Block(self.col, self.row, self.cols, self.rows, self.owner, self.offset, self.ld, order)


class Blocks:
    """Any blocks covering the m x n matrix once: each rank passes its own, or every rank the
    whole list (owners named). Block(...) or (row, col, rows, cols) tuples."""

    def __init__(self, m, n, blocks):
        self.m, self.n = int(m), int(n)
        self.blocks = [b if isinstance(b, Block) else Block(*b) for b in blocks]

    def transposed(self):
        return Blocks(self.n, self.m, [b.transposed() for b in self.blocks])

    def _own(self, rank):
        return [b for b in self.blocks if b.owner in (-1, rank)]

    def flat(self, rank):
        """Whether the rank's array is a flat buffer (explicit storage) rather than its one block."""
        own = self._own(rank)
        return any(b.explicit for b in own) or len(own) != 1

    def local_shape(self, size, rank):
        own = self._own(rank)
        return None if self.flat(rank) else (own[0].rows, own[0].cols)

    row_storage = True

    def _make(self, order, ld, size, rank):
        arr = (_c.Block * max(1, len(self.blocks)))()
        for i, b in enumerate(self.blocks):
            mine = b.owner in (-1, rank)
            if mine and b.explicit:
                o = _c.ROW_MAJOR if b.order == "C" else _c.COL_MAJOR
                arr[i] = _c.Block(b.row, b.col, b.rows, b.cols, b.offset or 0, b.ld or 0, b.owner, o)
            elif mine:
                arr[i] = _c.Block(b.row, b.col, b.rows, b.cols, 0, ld, b.owner, order)
            else:
                arr[i] = _c.Block(b.row, b.col, b.rows, b.cols, 0, 0, b.owner, _c.COL_MAJOR)
        h = _c.handle()
        _c.lib.distmm_layout_blocks(ctypes.byref(h), self.m, self.n, len(self.blocks), arr)
        return h


# ---- arrays: host memory, dtype, storage ----

_DTYPES = {np.dtype(np.float32): _c.F32, np.dtype(np.float64): _c.F64,
           np.dtype(np.complex64): _c.C32, np.dtype(np.complex128): _c.C64}


class _Flags:
    def __init__(self, c, f):
        self.c_contiguous, self.f_contiguous, self.writeable = c, f, True


class _DeviceArray:
    """A GPU array seen through __cuda_array_interface__ or DLPack: pointer, shape, byte strides,
    dtype (what the plan reads of an array), and the object that owns the memory (kept alive)."""
    device = True

    def __init__(self, ptr, shape, strides, dtype, owner, kind):
        self.ptr, self.shape, self.dtype, self.owner, self.kind = int(ptr), tuple(shape), np.dtype(dtype), owner, kind
        self.itemsize, self.ndim = self.dtype.itemsize, len(self.shape)
        self.size = int(np.prod(self.shape)) if self.shape else 1
        if strides is None:  # C-contiguous
            st, acc = [], self.itemsize
            for n in reversed(self.shape):
                st.append(acc)
                acc *= max(int(n), 1)
            strides = tuple(reversed(st))
        self.strides = tuple(int(v) for v in strides)
        self.flags = _Flags(*((True, True) if self.size == 0 else _contiguity(self.shape, self.strides, self.itemsize)))


def _contiguity(shape, strides, itemsize):
    def tight(order):
        acc = itemsize
        for n, s in order:
            if n > 1 and s != acc:
                return False
            acc *= n
        return True
    dims = list(zip(shape, strides))
    return tight(reversed(dims)), tight(dims)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_DL_CUDA, _DL_CUDA_MANAGED = 2, 13
_DL_CODES = {(0, 2): None, (2, 32): np.float32, (2, 64): np.float64, (5, 64): np.complex64, (5, 128): np.complex128}


def _from_dlpack(x, kind):
    """A DLPack tensor on a CUDA device, without a copy: the capsule's DLTensor read (the capsule is
    kept, not consumed, so its producer keeps the memory and frees it when the capsule goes)."""
    cap = x.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    t = _DLTensor.from_address(get(cap, b"dltensor"))  # DLManagedTensor starts with its DLTensor
    dt = _DL_CODES.get((t.dtype.code, t.dtype.bits))
    if dt is None or t.dtype.lanes != 1:
        raise _Local("distmm: a DLPack tensor of type code %d, %d bits: distmm takes float32, float64, complex64, "
                     "complex128" % (t.dtype.code, t.dtype.bits))
    shape = [t.shape[i] for i in range(t.ndim)]
    item = np.dtype(dt).itemsize
    strides = None if not t.strides else [t.strides[i] * item for i in range(t.ndim)]
    return _DeviceArray((t.data or 0) + t.byte_offset, shape, strides, dt, (x, cap), kind)


def _device_kind(x):
    """A name for a GPU array, None for host memory."""
    if hasattr(x, "__cuda_array_interface__"):
        return type(x).__module__.split(".")[0] + "." + type(x).__name__ + " (__cuda_array_interface__)"
    dev = getattr(x, "__dlpack_device__", None)
    if dev is not None and not isinstance(x, np.ndarray):
        try:
            kind = dev()[0]
        except Exception:
            kind = None
        if kind is not None and int(kind) not in (1, 3):  # kDLCPU, kDLCUDAHost
            return type(x).__module__.split(".")[0] + "." + type(x).__name__ + " (DLPack device %d)" % int(kind)
    return None


def _device_array(x, name):
    """x (a GPU array) as a _DeviceArray, no copy."""
    kind = _device_kind(x)
    if isinstance(x, _DeviceArray):
        return x
    if hasattr(x, "__cuda_array_interface__"):
        cai = x.__cuda_array_interface__
        mask = cai.get("mask")
        if mask is not None:
            raise _Local("distmm: %s (%s) has a mask: pass an unmasked array" % (name, kind))
        return _DeviceArray(cai["data"][0] or 0, cai["shape"], cai.get("strides"), np.dtype(cai["typestr"]), x, kind)
    dev = x.__dlpack_device__()
    if int(dev[0]) not in (_DL_CUDA, _DL_CUDA_MANAGED):
        raise _Local("distmm: %s is on DLPack device type %d: distmm takes host memory or CUDA devices" %
                     (name, int(dev[0])), _c.ERR_UNSUPPORTED)
    return _from_dlpack(x, kind)


def _host_array(x, name, writable=False):
    """x as a NumPy array, or as a _DeviceArray where it is a GPU array (no copy either way)."""
    if isinstance(x, _DeviceArray) or _device_kind(x):
        return _device_array(x, name)
    if writable and not isinstance(x, np.ndarray):
        raise _Local("distmm: %s must be a NumPy array (it is written), not %s" % (name, type(x).__name__))
    x = np.asarray(x)
    if writable and not x.flags.writeable:
        raise _Local("distmm: %s is read-only: pass a writable array" % name)
    return x


def _on_device(x):
    return isinstance(x, _DeviceArray)


def _ptr(x):
    return (x.ptr if _on_device(x) else x.ctypes.data) or None


def _storages(x):
    """(col_ld, row_ld): the leading dimension of x as column-major / row-major storage, None where
    its strides are not that."""
    if x.ndim != 2:
        return None, None
    r, c = x.shape
    if x.size == 0:
        return max(1, r), max(1, c)
    s0, s1 = x.strides
    it = x.itemsize
    if s0 % it or s1 % it or s0 < 0 or s1 < 0:
        return None, None
    s0, s1 = s0 // it, s1 // it
    col = (s1 if c > 1 else max(1, r)) if (r <= 1 or s0 == 1) else None
    row = (s0 if r > 1 else max(1, c)) if (c <= 1 or s1 == 1) else None
    col = col if col is not None and col >= max(1, r) else None
    row = row if row is not None and row >= max(1, c) else None
    return col, row


def _flip(op, complex_):
    return {"N": "T", "T": "N", "C": None if complex_ else "N"}[op]


class _Operand:
    """One matrix described for the C API: layout, op, storage, the array used."""

    def __init__(self, geom, order, ld, op, array):
        self.geom, self.order, self.ld, self.op, self.array = geom, order, ld, op, array


def _check_shape(x, geom, name, size, rank):
    """x fits geom on this rank: a 2-D array of its local shape, or a contiguous flat buffer."""
    if isinstance(geom, Blocks) and geom.flat(rank):
        if not (x.flags.c_contiguous or x.flags.f_contiguous):
            raise _Local("distmm: %s is a flat buffer for explicit blocks and must be contiguous" % name)
        return
    want = geom.local_shape(size, rank)
    if x.ndim != 2 or (tuple(x.shape) != tuple(want) and not (x.size == 0 and want[0] * want[1] == 0)):
        raise _Local("distmm: %s on rank %d has shape %s but its layout (%s) gives this rank %d x %d: pass the "
                     "local part as a 2-D array of that shape" % (name, rank, tuple(x.shape), type(geom).__name__,
                                                                  want[0], want[1]))


def _candidates(x, geom, op, transposed, complex_, rank):
    """The ways to describe operand X (array x, layout geom, op) to the C API in the problem as
    computed (as is, or the transposed problem's X^T), best first (column-major storage is usable in
    place): four (layout, order, ld, op), None where x's strides or the op rule it out."""
    if isinstance(geom, Blocks) and geom.flat(rank):  # explicit storage: transposing flips each block's order
        return [(geom.transposed() if transposed else geom, 0, 0, op), None, None, None]
    col, row = _storages(x)
    gt = geom.transposed()
    fo = _flip(op, complex_)
    if not transposed:  # the operand is X
        cands = [(geom, _c.COL_MAJOR, col, op), (gt, _c.COL_MAJOR, row, fo),
                 (geom, _c.ROW_MAJOR, row, op), (gt, _c.ROW_MAJOR, col, fo)]
    else:  # the operand is X^T
        cands = [(gt, _c.COL_MAJOR, row, op), (geom, _c.COL_MAJOR, col, fo),
                 (gt, _c.ROW_MAJOR, col, op), (geom, _c.ROW_MAJOR, row, fo)]
    return [None if ld is None or o is None or (order == _c.ROW_MAJOR and not g.row_storage) else (g, order, ld, o)
            for g, order, ld, o in cands]


def _mask(cands):
    return sum(1 << i for i, x in enumerate(cands) if x is not None)


def _op(o, name):
    o = str(o).upper()
    if o not in _c.OP:
        raise _Local("distmm: %s %r is not 'N', 'T' or 'C'" % (name, o))
    return o


def _layouts(layout):
    if isinstance(layout, dict):
        return layout["a"], layout["b"], layout["c"]
    la, lb, lc = layout
    return la, lb, lc


# ---- the plan ----

class Plan:
    """C = alpha op(A) op(B) + beta C planned once for arrays laid out like a, b, c (collective on
    comm): execute(a, b, c, alpha, beta) with these or any arrays of the same dtype, shape and
    strides. layout = (layout of A, of B, of C), each as stored (before op)."""

    def __init__(self, a, b, c, *, layout, comm=None, trans_a="N", trans_b="N", options=None, accuracy=None):
        self.comm, self._f, size, rank = _comm(comm)
        options = _with_accuracy(options, accuracy)
        self._h = None
        problem, prep, mask = None, None, 0
        try:
            prep, mask = self._prepare(a, b, c, layout, trans_a, trans_b, size, rank)
        except Exception as e:  # noqa: BLE001
            problem = _as_local(e)
        _agree(self._f, problem)
        from mpi4py import MPI
        self._choose(prep, self.comm.allreduce(mask, op=MPI.BAND), size, rank)
        hs = [o.geom._make(o.order, o.ld, size, rank) for o in self._ops]
        for h, o in zip(hs, self._ops):
            if _on_device(o.array):
                _c.lib.distmm_layout_set_memory(h, _c.MEMORY_DEVICE)
        h = _c.handle()
        st = _c.lib.distmm_plan_create_f(ctypes.byref(h), self._f, self._dt, _c.OP[self._ops[0].op], hs[0],
                                         _c.OP[self._ops[1].op], hs[1], hs[2],
                                         (options or "").encode())
        for x in hs:
            _c.lib.distmm_layout_destroy(x)
        if st != _c.SUCCESS:
            _raise(st)
        self._h = h
        problem = None
        try:
            self._check_extents(self._ops[0].array, self._ops[1].array, self._ops[2].array)
        except _Local as e:
            problem = e
        _agree(self._f, problem)

    def _prepare(self, a, b, c, layout, trans_a, trans_b, size, rank):
        """Local checks, and a bit mask of the descriptions this rank's arrays allow."""
        la, lb, lc = _layouts(layout)
        trans_a, trans_b = _op(trans_a, "trans_a"), _op(trans_b, "trans_b")
        a, b = _host_array(a, "A"), _host_array(b, "B")
        c = _host_array(c, "C", writable=True)
        dt = _DTYPES.get(c.dtype)
        if dt is None or a.dtype != c.dtype or b.dtype != c.dtype:
            raise _Local("distmm: A, B and C must have one dtype of float32, float64, complex64, complex128; got "
                         "%s, %s, %s (convert with .astype)" % (a.dtype, b.dtype, c.dtype))
        for x, g, name in ((a, la, "A"), (b, lb, "B"), (c, lc, "C")):
            _check_shape(x, g, name, size, rank)
        complex_ = dt in (_c.C32, _c.C64)
        flat_c = isinstance(lc, Blocks) and lc.flat(rank)
        col, row = (0, 0) if flat_c else _storages(c)  # explicit blocks: either orientation
        mask = (col is not None) | (row is not None) << 1
        for shift, (x, g, o) in ((2, (a, la, trans_a)), (10, (b, lb, trans_b))):
            for t in (False, True):
                mask |= _mask(_candidates(x, g, o, t, complex_, rank)) << (shift + 4 * t)
        self._dt, self.dtype, self._complex = dt, c.dtype, complex_
        self._sig = [(x.dtype, x.shape, x.strides) for x in (a, b, c)]  # what execute() checks
        return (a, b, c, la, lb, lc, trans_a, trans_b), mask

    def _choose(self, prep, mask, size, rank):
        """The descriptions every rank allows (mask: the AND over the ranks), the same on each: C
        column-major as is, or row-major as C^T = op(B)^T op(A)^T; A and B the first fitting
        description, or one local copy in the order that fits where none does on every rank."""
        a, b, c, la, lb, lc, trans_a, trans_b = prep
        if not mask & 3:
            raise Error("distmm: C's strides fit no storage distmm takes on every rank: pass C- or Fortran-ordered "
                        "arrays, the same order on every rank (C is written in place, so it is not copied)",
                        _c.ERR_ARGUMENT)
        self.transposed = not mask & 1
        t = self.transposed
        gc = lc.transposed() if t else lc
        col, row = _storages(c) if not (isinstance(lc, Blocks) and lc.flat(rank)) else (0, 0)
        oc = _Operand(gc, _c.COL_MAJOR, row if t else col, None, c)
        ops, self._copied = [], []
        for shift, x, g, o in ((2, a, la, trans_a), (10, b, lb, trans_b)):
            bits = (mask >> (shift + 4 * t)) & 15
            copied = bits == 0
            if copied and _on_device(x):
                raise ArgumentError("distmm: %s's strides fit no storage distmm takes on every rank with C %s-ordered, and a "
                            "GPU array is not copied behind your back: pass it %s-ordered (e.g. cupy.asfortranarray)"
                            % ("A" if shift == 2 else "B", "C" if t else "Fortran", "C" if t else "Fortran"),
                            _c.ERR_ARGUMENT)
            if copied:  # one local copy, in the order whose first description fits everywhere
                x = x.copy(order="C" if t else "F")
                bits = 1
            cands = _candidates(x, g, o, t, self._complex, rank)
            i = min(k for k in range(4) if bits >> k & 1)
            ops.append(_Operand(*cands[i], x))
            self._copied.append(copied)
        self._ops = [ops[1], ops[0], oc] if t else [ops[0], ops[1], oc]

    def _check_extents(self, *arrays):
        for i, x in enumerate(arrays):
            e = _c.index_t()
            _c.lib.distmm_plan_extent(self._h, i, ctypes.byref(e))
            reach = 0 if x.size == 0 else 1 + sum((n - 1) * s for n, s in zip(x.shape, x.strides)) // x.itemsize
            if e.value > reach:
                raise _Local("distmm: the layout reaches %d elements from this rank's base pointer of an operand but "
                             "its array holds %d: pass an array as large as its layout" % (e.value, reach))

    def execute(self, a, b, c, alpha=1, beta=0):
        """Collective: c = alpha op(a) op(b) + beta c, in place in c. Returns c."""
        given_c = c
        problem = None
        ptrs = None
        try:
            a, b = _host_array(a, "A"), _host_array(b, "B")
            c = _host_array(c, "C", writable=True)
            for name, x, sig in zip("ABC", (a, b, c), self._sig):
                if (x.dtype, x.shape, x.strides) != sig:
                    raise _Local("distmm: %s is %s %s with strides %s but the plan was made for %s %s with strides "
                                 "%s: make a plan for these arrays" % (name, x.dtype, x.shape, x.strides, *sig))
            # inputs the plan had to copy once (strides that fit nothing) are copied again
            if self._copied[0]:
                a = a.copy(order="C" if self.transposed else "F")
            if self._copied[1]:
                b = b.copy(order="C" if self.transposed else "F")
            first, second = (b, a) if self.transposed else (a, b)
            alpha_ = np.array(alpha, dtype=self.dtype)
            beta_ = np.array(beta, dtype=self.dtype)
            ptrs = (alpha_, first, second, beta_, c)
        except Exception as e:  # noqa: BLE001 (agreed on, then raised on every rank)
            problem = _as_local(e)
        _agree(self._f, problem)
        al, x1, x2, be, cc = ptrs
        st = _c.lib.distmm_plan_execute(self._h, al.ctypes.data, _ptr(x1), _ptr(x2), be.ctypes.data, _ptr(cc))
        if st != _c.SUCCESS:
            _raise(st)
        return given_c

    def _query(self, f, *args):
        st = f(self._h, *args)
        if st != _c.SUCCESS:
            _raise(st)

    @property
    def algorithm(self):
        buf = ctypes.create_string_buffer(64)
        self._query(_c.lib.distmm_plan_algorithm, buf, 64, None)
        return buf.value.decode()

    def _moved(self, scope):
        w = (_c.index_t * 3)()
        self._query(_c.lib.distmm_plan_moved, scope, w)
        return {"a": w[1] if self.transposed else w[0], "b": w[0] if self.transposed else w[1], "c": w[2]}

    @property
    def moved(self):
        """Elements of A, B and C this rank sends to redistribute them."""
        return self._moved(_c.RANK)

    @property
    def moved_max(self):
        return self._moved(_c.MAX)

    @property
    def moved_total(self):
        return self._moved(_c.TOTAL)

    @property
    def memory_bytes(self):
        v = ctypes.c_int64()
        self._query(_c.lib.distmm_plan_memory, ctypes.byref(v))
        return v.value

    @property
    def words(self):
        """The algorithm's analytic words and messages of the busiest rank."""
        w, m = ctypes.c_double(), ctypes.c_double()
        self._query(_c.lib.distmm_plan_words, ctypes.byref(w), ctypes.byref(m))
        return w.value, m.value

    @property
    def in_place(self):
        """Whether A, B, C are used where they are on this rank (no copy)."""
        v = (ctypes.c_int * 3)()
        self._query(_c.lib.distmm_plan_in_place, v)
        a, b = (v[1], v[0]) if self.transposed else (v[0], v[1])
        return {"a": bool(a), "b": bool(b), "c": bool(v[2])}

    def close(self):
        if self._h:
            _c.lib.distmm_plan_destroy(self._h)
            self._h = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _with_accuracy(options, accuracy):
    """options with accuracy=... added: the INT8-emulated engines' target, "native", "max" or a
    relative error such as 1e-10 (docs/accuracy.md); None leaves options as they are."""
    if accuracy is None:
        return options
    return ((options or "") + " accuracy=" + str(accuracy)).strip()


def matmul(a, b, c=None, *, layout, comm=None, trans_a="N", trans_b="N", alpha=1, beta=0, options=None,
           accuracy=None):
    """Collective: alpha op(A) op(B) + beta C with every rank's local parts a, b (and c), laid out
    as layout = (la, lb, lc) says. c None: a new local array of C (C-order when a and b both are,
    else Fortran order; beta ignored). Returns this rank's part of C. options: "algorithm=summa",
    "engine=blas", "accuracy=1e-10", "relabel=0", "direct=0" (space separated). accuracy: the
    INT8-emulated engines' target, "native" (their default), "max" or a relative error such as
    1e-10 (docs/accuracy.md)."""
    options = _with_accuracy(options, accuracy)
    comm, f, size, rank = _comm(comm)
    if c is None:
        problem = None
        try:
            lc = _layouts(layout)[2]
            shape = lc.local_shape(size, rank)
            if shape is None:
                raise _Local("distmm.matmul: C's layout has explicit block storage: pass c")
            a_, b_ = _host_array(a, "A"), _host_array(b, "B")
            row = a_.flags.c_contiguous and b_.flags.c_contiguous
            beta = 0
        except Exception as e:  # noqa: BLE001
            problem = _as_local(e)
        _agree(f, problem)
        from mpi4py import MPI
        row = comm.allreduce(bool(row), op=MPI.LAND)  # one order on every rank
        if _on_device(a_) or _on_device(b_):  # C where A and B are: CuPy makes it (a GPU array)
            import cupy
            c = cupy.zeros(shape, dtype=np.result_type(a_.dtype, b_.dtype), order="C" if row else "F")
        else:
            c = np.zeros(shape, dtype=np.result_type(a_.dtype, b_.dtype), order="C" if row else "F")
    with Plan(a, b, c, layout=layout, comm=comm, trans_a=trans_a, trans_b=trans_b, options=options) as p:
        return p.execute(a, b, c, alpha, beta)
