#!/usr/bin/env bash
# Issue 17's benchmark: P = 16 (4 x 4 grid), nb = 256, f64, one rank per core, one thread each.
# The same ScaLAPACK program (pxgemm_driver bench) without and with LD_PRELOAD of
# libdistmm_scalapack.so, beside COSMA's pxgemm_miniapp (its ScaLAPACK wrappers).
#   bench_pxgemm.sh DIR_WITH_DRIVER_AND_LIB COSMA_PXGEMM_MINIAPP [REPS [SHAPES...]]
set -uo pipefail
dir=$1 cosma=$2 reps=${3:-2}
shift 3 2>/dev/null || shift $#
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=("8192 8192 8192" "4096 4096 65536" "16384 16384 16384")
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
run() { timeout 300 mpirun -n 16 --oversubscribe --bind-to core "$@" 2>&1 | grep -v -iE "pmix|dlopen|Perhaps a missing"; }
for shape in "${shapes[@]}"; do
  set -- $shape
  m=$1 n=$2 k=$3
  echo "== $m x $n x $k"
  run "$dir/pxgemm_driver" bench $m $n $k 256 4 4 $reps | sed 's/^/scalapack  /'
  run -x LD_PRELOAD="$dir/libdistmm_scalapack.so" -x DISTMM_VERBOSE=1 \
    "$dir/pxgemm_driver" bench $m $n $k 256 4 4 $reps | sed 's/^/distmm     /'
  run -x DISTMM_ALGO=summa -x LD_PRELOAD="$dir/libdistmm_scalapack.so" \
    "$dir/pxgemm_driver" bench $m $n $k 256 4 4 $reps | sed 's/^/distmm-summa /'
  run "$cosma" -m $m -n $n -k $k --block_a 256,256 --block_b 256,256 --block_c 256,256 \
    -p 4,4 -r $reps --algorithm cosma | grep -iE "cosma|time|ms" | sed 's/^/cosma      /'
done
