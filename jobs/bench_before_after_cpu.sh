#!/usr/bin/env bash
# Two builds side by side on one host's cores, interleaved, ROUNDS rounds (default 5): P ranks
# (default 16), one thread each, SUMMA, cuboid, CAPS and auto at f64 SIZE (default 6144), each
# distmm run --warmup 1 --repeat 3, its median; then, where OLD_SO and NEW_SO are given, the
# drop-in: the same ScaLAPACK program (DRIVER: tests/mpi/scalapack/pxgemm_driver.cpp's bench)
# under LD_PRELOAD of each library, 4 x 4 grid, nb 256, 8192^3 and 4096 x 4096 x 65536, the
# median of 3 calls after a warm-up. Lines go to stdout and OUT/perf.log.
#   OLD=old/distmm NEW=new/distmm [OLD_SO=... NEW_SO=... DRIVER=...] bash jobs/bench_before_after_cpu.sh
set -uo pipefail
old=${OLD:?OLD=the old distmm binary} new=${NEW:?NEW=the new distmm binary}
out=${OUT:-$(mktemp -d)} P=${P:-16} n=${SIZE:-6144}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M=${MPIRUN:-"mpirun --oversubscribe"}
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
cmed() { grep -oE 'call [0-9]+: [0-9.]+ s' | awk '{print $3}' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
say() { echo "$*" | tee -a "$out/perf.log"; }
for r in $(seq "${ROUNDS:-5}"); do for a in summa cuboid caps auto; do for b in old new; do
  bin=$old; [ $b = new ] && bin=$new
  say "host P=$P $a $n $b r$r $(timeout 120 $M -n $P --bind-to core "$bin" run --algo $a --size $n --threads 1 \
    --warmup 1 --repeat 3 --verify none 2>&1 | med)"
done; done; done
[ -n "${OLD_SO:-}" ] && [ -n "${NEW_SO:-}" ] || exit 0
for r in $(seq "${ROUNDS:-5}"); do for shape in "8192 8192 8192" "4096 4096 65536"; do for b in old new; do
  so=$OLD_SO; [ $b = new ] && so=$NEW_SO
  set -- $shape
  say "drop-in ${1}x${2}x${3} $b r$r $(timeout 180 $M -n 16 --bind-to core -x LD_PRELOAD="$so" -x DISTMM_SCALAPACK_MIN=0 \
    "${DRIVER:-build/tests/pxgemm_driver}" bench $1 $2 $3 256 4 4 3 1 2>&1 | cmed)"
done; done; done
