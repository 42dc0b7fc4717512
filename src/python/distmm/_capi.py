"""ctypes over libdistmm_c.so (src/distmm.h): the library found, every signature declared."""
import ctypes
import ctypes.util
import os

# Status codes, dtypes, ops, orders (src/distmm.h)
SUCCESS, ERR_ARGUMENT, ERR_LAYOUT, ERR_USAGE, ERR_MEMORY, ERR_MPI, ERR_UNSUPPORTED, ERR_INTERNAL = range(8)
F32, F64, C32, C64 = range(4)
OP = {"N": 0, "T": 1, "C": 2}
COL_MAJOR, ROW_MAJOR = 0, 1
GRID_ROW_MAJOR, GRID_COL_MAJOR = 0, 1
RANK, MAX, TOTAL = 0, 1, 2
MEMORY_HOST, MEMORY_DEVICE = 0, 1

index_t = ctypes.c_int64
handle = ctypes.c_void_p


class Block(ctypes.Structure):
    _fields_ = [("row", index_t), ("col", index_t), ("rows", index_t), ("cols", index_t),
                ("offset", index_t), ("ld", index_t), ("owner", ctypes.c_int32), ("order", ctypes.c_int32)]


def _candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get("DISTMM_C_LIBRARY")
    if env:
        yield env
    yield os.path.join(here, "libdistmm_c.so")  # the build tree (a link to the built library)
    try:
        from . import _install  # written by CMake into the installed package
        yield os.path.normpath(os.path.join(here, _install.LIBDIR, "libdistmm_c.so"))
    except ImportError:
        pass
    found = ctypes.util.find_library("distmm_c")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    raise ImportError("distmm: libdistmm_c.so not found (looked at: " + ", ".join(tried) +
                      "): build the distmm_c target, or set DISTMM_C_LIBRARY to its path")


lib = _load()

_P = ctypes.POINTER
_sig = {
    "distmm_last_error": (ctypes.c_char_p, []),
    "distmm_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "distmm_agree_f": (ctypes.c_int, [ctypes.c_int, ctypes.c_int, ctypes.c_char_p]),
    "distmm_layout_block_cyclic": (ctypes.c_int, [_P(handle), index_t, index_t, index_t, index_t, ctypes.c_int,
                                                  ctypes.c_int, ctypes.c_int, ctypes.c_int, index_t, ctypes.c_int]),
    "distmm_layout_row_slabs": (ctypes.c_int, [_P(handle), index_t, index_t, ctypes.c_int, _P(index_t), index_t,
                                               ctypes.c_int]),
    "distmm_layout_col_slabs": (ctypes.c_int, [_P(handle), index_t, index_t, ctypes.c_int, _P(index_t), index_t,
                                               ctypes.c_int]),
    "distmm_layout_blocks": (ctypes.c_int, [_P(handle), index_t, index_t, ctypes.c_int, _P(Block)]),
    "distmm_layout_destroy": (ctypes.c_int, [handle]),
    "distmm_layout_set_memory": (ctypes.c_int, [handle, ctypes.c_int]),
    "distmm_device_support": (ctypes.c_int, []),
    "distmm_plan_create_f": (ctypes.c_int, [_P(handle), ctypes.c_int, ctypes.c_int, ctypes.c_int, handle,
                                            ctypes.c_int, handle, handle, ctypes.c_char_p]),
    "distmm_plan_execute": (ctypes.c_int, [handle, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                           ctypes.c_void_p, ctypes.c_void_p]),
    "distmm_plan_destroy": (ctypes.c_int, [handle]),
    "distmm_plan_algorithm": (ctypes.c_int, [handle, ctypes.c_char_p, ctypes.c_size_t, _P(ctypes.c_size_t)]),
    "distmm_plan_moved": (ctypes.c_int, [handle, ctypes.c_int, _P(index_t)]),
    "distmm_plan_words": (ctypes.c_int, [handle, _P(ctypes.c_double), _P(ctypes.c_double)]),
    "distmm_plan_memory": (ctypes.c_int, [handle, _P(ctypes.c_int64)]),
    "distmm_plan_in_place": (ctypes.c_int, [handle, _P(ctypes.c_int)]),
    "distmm_plan_extent": (ctypes.c_int, [handle, ctypes.c_int, _P(index_t)]),
}
for _name, (_res, _args) in _sig.items():
    _f = getattr(lib, _name)
    _f.restype, _f.argtypes = _res, _args


def last_error():
    return lib.distmm_last_error().decode("utf-8", "replace")
