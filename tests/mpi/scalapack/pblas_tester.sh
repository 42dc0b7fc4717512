#!/usr/bin/env bash
# Runs ScaLAPACK's PBLAS level-3 tester (Debian's scalapack-mpi-test) on P?GEMM only, from one of
# our input files, under LD_PRELOAD of the distmm drop-in, and fails unless every case passed, the
# error exits were checked, and distmm (not ScaLAPACK) answered the calls.
#   pblas_tester.sh LIB|none TYPE(s|d|c|z) SET(main|src|aligned) NPROCS MPIEXEC [ALPHA BETA [DIRECT]]
# (ALPHA empty: the default; BETA 0: beta = 0 in the type's notation; DIRECT: the value of
# DISTMM_SCALAPACK_DIRECT, default 1; force: SUMMA on the block-cyclic layout wherever the
# operands line up, ksplit: the k-split there; at least one call must have run so)
set -euo pipefail
lib=$1 t=$2 set=$3 np=$4 mpiexec=$5 direct=${8:-1}
here=$(cd "$(dirname "$0")" && pwd)
T=$(echo "$t" | tr a-z A-Z)
bin=/usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests/PBLAS/${t}pb3tst
if [ ! -x "$bin" ]; then
  echo "SKIP: $bin missing (Debian package scalapack-mpi-test)"; exit 77
fi
case $t in
  s) alpha=${6:-2.0E0} beta=${7:-3.0E0} ;;
  d) alpha=${6:-2.0D0} beta=${7:-3.0D0} ;;
  c) alpha=${6:-(2.0E0,-4.0E0)} beta=${7:-(3.0E0,-2.0E0)} ;;
  z) alpha=${6:-(2.0D0,-4.0D0)} beta=${7:-(3.0D0,-2.0D0)} ;;
esac
if [ "${7:-}" = 0 ]; then  # beta = 0: C is not read
  case $t in s|d) beta=0.0 ;; c|z) beta="(0.0,0.0)" ;; esac
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -e "s/@X@/$T/g" -e "s/@ALPHA@/$alpha/" -e "s/@BETA@/$beta/" "$here/PXBLAS3TST.$set.dat" \
  > "$work/P${T}BLAS3TST.dat"
# The routine list: P?GEMM only.
case $t in
  s|d) routines="GEMM SYMM SYRK SYR2K TRMM TRSM GEADD TRADD" ;;
  c|z) routines="GEMM SYMM HEMM SYRK HERK SYR2K HER2K TRMM TRSM GEADD TRADD" ;;
esac
for r in $routines; do
  flag=F; [ $r = GEMM ] && flag=T
  printf "%-8s%s\tput F for no test in the same column\n" "P$T$r" $flag >> "$work/P${T}BLAS3TST.dat"
done
cd "$work"
stats=$work/stats.jsonl
env=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
     OPENBLAS_NUM_THREADS=1 DISTMM_SCALAPACK_MIN=0 DISTMM_SCALAPACK_STATS=$stats
     DISTMM_SCALAPACK_DIRECT=$direct)
[ "$lib" != none ] && env+=(LD_PRELOAD=$lib)
set +e
env "${env[@]}" timeout 300 "$mpiexec" -n "$np" --oversubscribe \
  -x LD_PRELOAD -x DISTMM_SCALAPACK_MIN -x DISTMM_SCALAPACK_STATS -x DISTMM_SCALAPACK_DIRECT \
  "$bin" > out.txt 2>&1
rc=$?
set -e
cat out.txt
fail() { echo "FAIL: $*"; exit 1; }
[ $rc -eq 0 ] || fail "tester exited with $rc"
grep -q "End of Tests" out.txt || fail "tester did not finish"
grep -q "Error-exit tests completed" out.txt || fail "error exits not tested"
# Error-exit mismatches ("*** ERROR *** ERROR CODE RETURNED"), wrong results ("***** ERROR"),
# input-only arguments changed ("Input-only parameter check ... FAILED"), fatal errors.
if grep -E "\*\*\* ERROR|FATAL|FAILED +\*|incorrect value|not supported|Bad .* parameters|ILLEGAL" out.txt; then
  fail "the tester reported errors (above)"
fi
# The summary line: "|  PxGEMM  total  passed  failed  skipped".
line=$(grep -E "^ *\|? *P${T}GEMM +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ *$" out.txt || true)
[ -n "$line" ] || fail "no P${T}GEMM summary line"
read -r total passed failed skipped < <(echo "$line" | grep -oE "[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ *$")
echo "summary: total $total passed $passed failed $failed skipped $skipped"
[ "$failed" -eq 0 ] || fail "$failed failed"
[ "$skipped" -eq 0 ] || fail "$skipped skipped"
[ "$total" -gt 0 ] && [ "$passed" -eq "$total" ] || fail "passed $passed of $total"
if [ "$lib" != none ]; then
  answered=$(grep -c '"handed_to_scalapack":false' "$stats" 2>/dev/null || true)
  handed=$(grep -c '"handed_to_scalapack":true' "$stats" 2>/dev/null || true)
  echo "distmm answered $answered calls, handed $handed to ScaLAPACK"
  [ "${answered:-0}" -gt 0 ] || fail "distmm answered no call"
  [ "${handed:-0}" -eq 0 ] || fail "calls were handed to ScaLAPACK with DISTMM_SCALAPACK_MIN=0"
  if [ "$direct" = force ] || [ "$direct" = ksplit ]; then
    inplace=$(grep -c '"path":"block-cyclic"' "$stats" 2>/dev/null || true)
    echo "of them $inplace on the block-cyclic layout itself"
    [ "${inplace:-0}" -gt 0 ] || fail "no call ran on the block-cyclic layout"
  fi
  if [ "$direct" = ksplit ]; then
    grep -q '"algorithm":"block-cyclic k-split"' "$stats" || fail "no call ran the k-split"
  fi
fi
echo PASS
