#!/usr/bin/env bash
# Side-by-side benchmark of the distributed algorithms against ScaLAPACK PDGEMM in one run:
# every algorithm on the same ranks, sizes and inputs, one thread per rank, f64.
#   jobs/bench_distributed.sh RANKS "SIZES" "ALGOS" [extra distmm args]
# e.g. jobs/bench_distributed.sh 4 "2048 4096" "summa cannon scalapack"
#      jobs/bench_distributed.sh 49 "4096 8192" "caps:BB caps:DBB cannon summa scalapack"
# (caps:STEPS fixes CAPS's step sequence; plain caps chooses by memory)
# Prints a Markdown table (median time, GFLOP/s, ratio over ScaLAPACK, words per rank).
set -euo pipefail
cd "$(dirname "$0")/.."
np=${1:-4}
sizes=${2:-"2048 4096"}
algos=${3:-"summa cannon scalapack"}
shift $(( $# < 3 ? $# : 3 ))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
out=${BENCH_JSON:-$(mktemp --suffix=.jsonl)}
bin=${DISTMM_BIN:-build/distmm}
for n in $sizes; do
  for spec in $algos; do
    a=${spec%%:*} steps=""
    [ "$spec" != "$a" ] && steps="--caps-steps ${spec#*:}"
    mpirun -n "$np" --oversubscribe ${MPIRUN_ARGS:-} "$bin" run --size "$n" --algo "$a" --dtype f64 \
      --threads 1 --repeat "${REPEAT:-3}" --warmup 1 --verify freivalds --quiet --json "$out" $steps "$@"
  done
done
/usr/bin/python3 jobs/bench_table.py "$out" --baseline scalapack
