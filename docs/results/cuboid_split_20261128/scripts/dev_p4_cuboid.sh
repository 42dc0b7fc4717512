#!/usr/bin/env bash
# Session 28: cuboid's step-0 split on the host (dev VM, P = 4, 2 cores), base bb6ea7f against
# main, both built with -DDISTMM_CUDA=OFF; five rounds, the order alternating.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
B=/work/wt-base/build/distmm N=/work/wt-new/build/distmm
for r in 1 2 3 4 5; do
  for g in 2x2x1 4x1x1 1x4x1; do
    order="base new"; [ $((r % 2)) = 0 ] && order="new base"
    for b in $order; do
      bin=$B; [ $b = new ] && bin=$N
      echo "$g $b r$r $(mpirun -n 4 --oversubscribe $bin run --algo cuboid --cuboid-grid $g --size 2400 --threads 1 --warmup 1 --repeat 3 --verify none 2>&1 | med)"
    done
  done
done
