#!/usr/bin/env bash
# Runs pxgemm_driver (a plain ScaLAPACK program: every case checked element by element against a
# reference from the global matrices) and fails on any wrong element; with a library, under
# LD_PRELOAD, and fails unless distmm answered every multiply (DISTMM_SCALAPACK_STATS), with
# phase times, on 4+ ranks some in place on the BLACS grid and some redistributed.
# DIRECT (default 1) is DISTMM_SCALAPACK_DIRECT: with 1 on 4+ ranks the k-dominant cases must
# have run the k-split, with ksplit every aligned case does. ARGS (e.g. `random SEED COUNT`)
# go to the driver; then only the answers are checked, not which paths ran. With
# DISTMM_KSPLIT_SKEW set (R:F, grid rank R reports F times its time to the k-split's balancer),
# some call must have moved pieces.
#   driver_test.sh plain|linked|LIB NPROCS DRIVER MPIEXEC [DIRECT [ARGS...]]
set -euo pipefail
mode=$1 np=$2 driver=$3 mpiexec=$4 direct=${5:-1}
shift $(( $# < 5 ? $# : 5 ))
args=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stats=$work/stats.jsonl
export DISTMM_SCALAPACK_MIN=0 DISTMM_SCALAPACK_STATS=$stats DISTMM_VERBOSE=1 DISTMM_SCALAPACK_DIRECT=$direct
preload=()
[ -n "${DISTMM_KSPLIT_SKEW:-}" ] && preload+=(-x DISTMM_KSPLIT_SKEW)
case $mode in plain|linked) ;; *) preload=(-x LD_PRELOAD="$mode") ;; esac
set +e
timeout 300 "$mpiexec" -n "$np" --oversubscribe "${preload[@]}" -x DISTMM_SCALAPACK_MIN \
  -x DISTMM_SCALAPACK_STATS -x DISTMM_VERBOSE -x DISTMM_SCALAPACK_DIRECT "$driver" ${args[@]+"${args[@]}"} > "$work/out.txt" 2>&1
rc=$?
set -e
cat "$work/out.txt"
[ $rc -eq 0 ] || { echo "FAIL: driver exited with $rc"; exit 1; }
grep -qE "^[0-9]+ cases, 0 failed" "$work/out.txt" || { echo "FAIL: no clean summary"; exit 1; }
if [ "$mode" = plain ]; then
  [ ! -s "$stats" ] || { echo "FAIL: distmm answered a plain ScaLAPACK run"; exit 1; }
else
  answered=$(grep -c '"handed_to_scalapack":false' "$stats" 2>/dev/null || true)
  handed=$(grep -c '"handed_to_scalapack":true' "$stats" 2>/dev/null || true)
  echo "distmm answered ${answered:-0} calls, handed ${handed:-0} to ScaLAPACK"
  [ "${answered:-0}" -gt 0 ] || { echo "FAIL: distmm answered no call"; exit 1; }
  [ "${handed:-0}" -eq 0 ] || { echo "FAIL: calls handed to ScaLAPACK with DISTMM_SCALAPACK_MIN=0"; exit 1; }
  grep -q "answered by distmm" "$work/out.txt" || { echo "FAIL: no DISTMM_VERBOSE line"; exit 1; }
  grep -q '"phases":{' "$stats" || { echo "FAIL: no phase times in the statistics"; exit 1; }
  grep -q '"phases_min":{' "$stats" || { echo "FAIL: no fastest-rank phase times in the statistics"; exit 1; }
  python3 - "$stats" <<'PY' || { echo "FAIL: a phase's minimum over the ranks exceeds its maximum"; exit 1; }
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    lo, hi = r.get("phases_min"), r.get("phases")
    if lo and any(v > hi["seconds_max" if k == "seconds" else k] + 1e-12 for k, v in lo.items()):
        sys.exit(1)
PY
  if [ -n "${DISTMM_KSPLIT_SKEW:-}" ]; then
    moved=$(grep -o '"pieces_moved":[0-9]*' "$stats" | cut -d: -f2 | sort -n | tail -1)
    echo "most pieces moved in one call: ${moved:-none}"
    [ "${moved:-0}" -gt 0 ] || { echo "FAIL: DISTMM_KSPLIT_SKEW set, but the balancer moved no piece"; exit 1; }
  fi
  if [ "$np" -ge 4 ] && [ ${#args[@]} -eq 0 ]; then  # both paths ran: in place on the BLACS grid, and redistributed
    grep -q '"path":"block-cyclic"' "$stats" || { echo "FAIL: no call ran on the block-cyclic layout"; exit 1; }
    grep -q '"path":"redistributed"' "$stats" || { echo "FAIL: no call was redistributed"; exit 1; }
    grep -q '"algorithm":"block-cyclic k-split"' "$stats" || { echo "FAIL: no call ran the k-split"; exit 1; }
  fi
fi
echo PASS
