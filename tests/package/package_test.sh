#!/usr/bin/env bash
# Installs the built tree into a temporary prefix, builds tests/package against it with
# find_package(distmm), and runs the C++ consumer and the C API's example (2 ranks); then imports
# the installed Python package (PYTHONPATH=PREFIX/lib/python3/site-packages) and multiplies.
set -euo pipefail
build=$1 src=$2 mpiexec=${3:-mpiexec}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src" -B "$tmp/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/b" -j2 >/dev/null
"$tmp/b/consumer"
"$mpiexec" -n 2 --oversubscribe "$tmp/b/c_consumer"
pydir=$(grep -o '^DISTMM_PYTHON_DIR:[^=]*=.*' "$build/CMakeCache.txt" | cut -d= -f2)
cd "$tmp" && PYTHONPATH="$tmp/prefix/$pydir" "$mpiexec" -n 2 --oversubscribe /usr/bin/python3 -c '
import numpy as np, distmm, os
from mpi4py import MPI
assert distmm.__file__.startswith(os.environ["PYTHONPATH"]), distmm.__file__
me = MPI.COMM_WORLD.Get_rank()
a = np.arange(6.0).reshape(3, 2)[[0, 2][me]:[2, 3][me]]   # rows of A: 2 on rank 0, 1 on rank 1
c = distmm.matmul(a, np.eye(2)[:, me:me + 1], layout=(distmm.RowSlabs(3, 2, [2, 1]),
                  distmm.ColSlabs(2, 2, [1, 1]), distmm.RowSlabs(3, 2, [2, 1])))
b0 = [0, 2][me]
assert np.array_equal(c, np.arange(6.0).reshape(3, 2)[b0:b0 + c.shape[0]]), c
if me == 0: print("installed python package: ok")'
