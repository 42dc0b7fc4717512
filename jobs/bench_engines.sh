#!/usr/bin/env bash
# Node engines against OpenBLAS in one run, one process, threads = cores:
#   jobs/bench_engines.sh "SIZES" "ENGINE:LEVELS ..." [dtype]
# e.g. jobs/bench_engines.sh "2048 4096 8192 12000" "blas:0 winograd:1 strassen:1 strassen-lowmem:1"
# Each size runs OpenBLAS first and last, so drift shows; ratios use the first.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-"2048 4096 8192 12000"}
specs=${2:-"blas:0 strassen:1 strassen-lowmem:1 winograd:1 winograd:2 mmra-shared:0 mmra-distributed:0 mmra-tradeoff:0 outer-product:0 equal-layout:0"}
dtype=${3:-f64}
out=${BENCH_JSON:-$(mktemp --suffix=.jsonl)}
bin=${DISTMM_BIN:-build/distmm}
for n in $sizes; do
  for spec in $specs; do
    e=${spec%%:*} l=${spec##*:}
    "$bin" run --size "$n" --engine "$e" --levels "$l" --dtype "$dtype" --repeat "${REPEAT:-3}" \
      --warmup 1 --verify freivalds --quiet --json "$out"
  done
done
/usr/bin/python3 jobs/bench_table.py "$out" --key engine_detail --baseline-field engine --baseline blas
