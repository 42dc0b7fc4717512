#!/usr/bin/env bash
# Issue 17's benchmark: P = 16 (4 x 4 grid), nb = 256, f64, one rank per core, one thread each.
# The same ScaLAPACK program (pxgemm_driver bench) without and with LD_PRELOAD of
# libdistmm_scalapack.so, beside COSMA's pxgemm_miniapp (its ScaLAPACK wrappers), in one job:
# every round runs each code once in a fresh process, the order rotated from round to round.
# Then the threshold sweep: small cubes on the same 4 x 4 grid with nb 64, PDGEMM against
# distmm (DISTMM_SCALAPACK_MIN=0), each in one process, a warm-up and REPS timed calls.
#   bench_pxgemm.sh DIR COSMA_PXGEMM_MINIAPP OUTDIR [BUDGET_S]
# DIR holds pxgemm_driver and libdistmm_scalapack.so. Raw lines go to OUTDIR/pxgemm_bench.txt
# ("RESULT shape code round call seconds"; call 1 is a process's first, cold call, call 2 a
# second, warm one), distmm's per-call statistics with phase times to OUTDIR/stats.jsonl. A step
# that would not end within BUDGET_S seconds (default 420) of the start is skipped, and says so.
# What runs, in this order (environment, defaults shown):
#   PLAN="8192x8192x8192:5:2 4096x4096x65536:5:1 sweep 16384x16384x16384:3:1"
#        shape:rounds:calls per process (2: a cold and a warm call), `sweep`, or
#        redist:shape (distmm once with DISTMM_SCALAPACK_DIRECT=0: the redistributing path's
#        phase times)
#   COSMA_ROUNDS_16384=1   COSMA's rounds at 16384^3 (~50 s each), run after the others
#   SWEEP="256 384 512 768 1024 1536 2048" SWEEP_REPS=7
#   BIND="--bind-to core"
#   SINGLE_COPY=cma        Open MPI's shared-memory single-copy mechanism for every code (the
#                          GPU machine's environment sets none: two copies per message)
#   WITH_SUMMA=1           distmm with DISTMM_SCALAPACK_DIRECT=force (SUMMA on the block-cyclic
#                          layout) as a fourth code in the rotation, except at 16384^3
#   WITH_NOBALANCE=1       distmm with DISTMM_KSPLIT_BALANCE=0 (the k-split without its
#                          balancer) in the rotation too, except at 16384^3
#   EST="8192x8192x8192=25 4096x4096x65536=30 16384x16384x16384=50 sweep=45" seconds per round
set -uo pipefail
dir=$1 cosma=$2 out=$3 budget=${4:-420}
mkdir -p "$out"
raw=$out/pxgemm_bench.txt stats=$out/stats.jsonl
: > "$raw"
plan=${PLAN:-"8192x8192x8192:5:2 4096x4096x65536:5:1 sweep 16384x16384x16384:3:1"}
cosma16=${COSMA_ROUNDS_16384:-1}
sweep_sizes=${SWEEP:-"256 384 512 768 1024 1536 2048"} sweep_reps=${SWEEP_REPS:-7}
declare -A est=([8192x8192x8192]=25 [4096x4096x65536]=30 [16384x16384x16384]=50 [sweep]=45
                [cosma16384]=60)
for e in ${EST:-}; do est[${e%%=*}]=${e#*=}; done
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive
[ -n "${SINGLE_COPY:-}" ] && export OMPI_MCA_btl_vader_single_copy_mechanism=$SINGLE_COPY
start=$(date +%s)
log() { echo "$*" | tee -a "$raw"; }
fits() {  # fits SECONDS: the step ends within the budget
  local now=$(( $(date +%s) - start ))
  if [ $(( now + $1 )) -gt "$budget" ]; then log "SKIP $2 (at ${now}s, ~$1 s more would pass ${budget}s)"; return 1; fi
}
bind=${BIND:---bind-to core}  # BIND="--bind-to none" where there are fewer than 16 cores
mpi() { timeout 300 mpirun -n 16 --oversubscribe $bind "$@" 2>&1 | grep -v -iE "pmix|dlopen|Perhaps a missing"; }
preload=(-x LD_PRELOAD="$dir/libdistmm_scalapack.so" -x DISTMM_VERBOSE=2 -x DISTMM_SCALAPACK_STATS="$stats")

# run CODE M N K CALLS ROUND: one process, CALLS timed calls, RESULT lines
run() {
  local code=$1 m=$2 n=$3 k=$4 calls=$5 round=$6 shape="${2}x${3}x${4}" lines
  case $code in
    pdgemm) lines=$(mpi "$dir/pxgemm_driver" bench $m $n $k 256 4 4 $calls 0) ;;
    distmm) lines=$(mpi "${preload[@]}" "$dir/pxgemm_driver" bench $m $n $k 256 4 4 $calls 0) ;;
    distmm-summa) lines=$(mpi "${preload[@]}" -x DISTMM_SCALAPACK_DIRECT=force "$dir/pxgemm_driver" \
                            bench $m $n $k 256 4 4 $calls 0) ;;
    distmm-nobalance) lines=$(mpi "${preload[@]}" -x DISTMM_KSPLIT_BALANCE=0 "$dir/pxgemm_driver" \
                            bench $m $n $k 256 4 4 $calls 0) ;;
    distmm-redist) lines=$(mpi "${preload[@]}" -x DISTMM_SCALAPACK_DIRECT=0 "$dir/pxgemm_driver" \
                             bench $m $n $k 256 4 4 $calls 0) ;;
    cosma) lines=$(mpi "$cosma" -m $m -n $n -k $k --block_a 256,256 --block_b 256,256 \
                     --block_c 256,256 -p 4,4 -r $calls --algorithm cosma) ;;
  esac
  echo "$lines" | grep -E "^distmm:|error|Error" | sed "s/^/  [$code $shape r$round] /" | tee -a "$raw"
  if [ $code = cosma ]; then
    local c=0
    for ms in $(echo "$lines" | grep "COSMA TIMES" | sed 's/.*= *//'); do
      c=$((c + 1)); log "RESULT $shape cosma $round $c $(awk -v x=$ms 'BEGIN{printf "%.3f", x/1000}')"
    done
  else
    # (a driver line may share its line with distmm's stderr: matched anywhere)
    echo "$lines" | grep -oE "pdgemm [0-9]+ x [0-9]+ x [0-9]+ nb [0-9]+ grid [0-9x]+ call [0-9]+: [0-9.]+ s" |
      while read -r line; do
        c=$(echo "$line" | sed 's/.* call \([0-9]*\):.*/\1/') s=$(echo "$line" | sed 's/.*: \([0-9.]*\) s$/\1/')
        log "RESULT $shape $code $round $c $s"
      done
  fi
}

sweep() {
  for s in $sweep_sizes; do
    for code in pdgemm distmm; do
      if [ $code = pdgemm ]; then lines=$(mpi "$dir/pxgemm_driver" bench $s $s $s 64 4 4 $sweep_reps 1)
      else lines=$(mpi -x DISTMM_SCALAPACK_MIN=0 -x LD_PRELOAD="$dir/libdistmm_scalapack.so" \
                     "$dir/pxgemm_driver" bench $s $s $s 64 4 4 $sweep_reps 1); fi
      echo "$lines" | grep -E "^pdgemm .* call" | while read -r line; do
        log "SWEEP ${s}x${s}x${s} $code nb64 $(echo "$line" | sed 's/.* call \([0-9]*\): \([0-9.]*\) s,.*/\1 \2/')"
      done
    done
  done
}

log "START $(date -u +%FT%TZ) $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')); plan: $plan; budget ${budget}s; single copy: ${OMPI_MCA_btl_vader_single_copy_mechanism:-the MPI default}"
for step in $plan; do
  if [ "$step" = sweep ]; then fits "${est[sweep]}" sweep && sweep; continue; fi
  if [ "${step%%:*}" = redist ]; then
    IFS=x read -r m n k <<< "${step#redist:}"
    fits 15 "$step" && run distmm-redist $m $n $k 1 1
    continue
  fi
  IFS=: read -r shape rounds calls <<< "$step"
  IFS=x read -r m n k <<< "$shape"
  codes=(pdgemm distmm cosma)
  [ -n "${WITH_SUMMA:-}" ] && codes+=(distmm-summa)
  [ -n "${WITH_NOBALANCE:-}" ] && codes+=(distmm-nobalance)
  [ "$shape" = 16384x16384x16384 ] && codes=(pdgemm distmm)
  for r in $(seq 1 "$rounds"); do
    fits "${est[$shape]:-60}" "$shape round $r" || break
    for i in $(seq 0 $(( ${#codes[@]} - 1 ))); do
      run ${codes[$(( (r - 1 + i) % ${#codes[@]} ))]} $m $n $k $calls $r
    done
  done
done
for r in $(seq 1 "$cosma16"); do
  fits "${est[cosma16384]}" "cosma 16384^3 round $r" || break
  run cosma 16384 16384 16384 1 $r
done
log "END at $(( $(date +%s) - start ))s"
