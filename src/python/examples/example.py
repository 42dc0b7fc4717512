"""distmm from Python: C = A B with A in ScaLAPACK's block-cyclic layout, B in row slabs and C in
column slabs, each rank holding only its own part as a NumPy array; checked against NumPy.
Run: PYTHONPATH=build/python mpirun -n 4 python3 src/python/examples/example.py"""
import numpy as np
from mpi4py import MPI

import distmm

comm = MPI.COMM_WORLD
P, me = comm.Get_size(), comm.Get_rank()
m, n, k = 300, 200, 250
A = np.arange(m * k, dtype=np.float64).reshape(m, k) % 7  # every rank makes the global inputs
B = np.arange(k * n, dtype=np.float64).reshape(k, n) % 5  # here only to cut out its parts

nprow = max(d for d in range(1, int(P ** 0.5) + 1) if P % d == 0)
la = distmm.BlockCyclic(m, k, 32, 32, nprow, P // nprow)  # A as ScaLAPACK holds it
lb = distmm.RowSlabs(k, n)                                # rank r: a slab of B's rows
lc = distmm.ColSlabs(m, n)                                # rank r: a slab of C's columns

prow, pcol = divmod(me, P // nprow)
rows = [i for i in range(m) if (i // 32) % nprow == prow]
cols = [j for j in range(k) if (j // 32) % (P // nprow) == pcol]
a = A[np.ix_(rows, cols)]                                 # C-order: used as is, no transpose
b0 = sum(distmm.even_sizes(k, P)[:me])
b = B[b0:b0 + distmm.even_sizes(k, P)[me]]

c = distmm.matmul(a, b, layout=(la, lb, lc), comm=comm)   # this rank's columns of C
plan = distmm.Plan(a, b, c, layout=(la, lb, lc))          # or plan once, execute often
plan.execute(a, b, c, alpha=1.0, beta=1.0)                # c = a b + c = 2 A B here
c0 = sum(distmm.even_sizes(n, P)[:me])
ok = comm.allreduce(int(np.array_equal(c, 2 * (A @ B)[:, c0:c0 + c.shape[1]])), op=MPI.MIN)
if me == 0:
    print("distmm %s on %d ranks, moved at most %s elements per rank: %s"
          % (plan.algorithm, P, plan.moved_max, "ok" if ok else "WRONG"))
raise SystemExit(0 if ok else 1)
