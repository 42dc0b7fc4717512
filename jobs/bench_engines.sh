#!/usr/bin/env bash
# Node engines against OpenBLAS in one process, threads = cores (`distmm engine-bench`):
#   jobs/bench_engines.sh "SIZES" "ENGINE:LEVELS ..." [dtype]
# e.g. jobs/bench_engines.sh "2048 4096 8192 12000" "blas:0 winograd:1 strassen:1 strassen-lowmem:1"
# Rounds are interleaved (each round times every engine once, the first engine rotating), so a
# drift of the machine hits all engines alike; ratios are medians over REPEAT rounds (5).
# BENCH_JSON appends the JSON lines there.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-"2048 4096 8192 12000"}
specs=${2:-"blas:0 strassen:1 strassen-lowmem:1 winograd:1 winograd:2 mmra-shared:0 mmra-distributed:0 mmra-tradeoff:0 mmra-shared-lru:0 mmra-distributed-lru:0 mmra-tradeoff-lru:0 outer-product:0 equal-layout:0"}
dtype=${3:-f64}
bin=${DISTMM_BIN:-build/distmm}
# Idle OpenMP threads sleep at once instead of spinning on a core that OpenBLAS's threads want
# (libgomp reads this at load time, so it is set here rather than inside distmm).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
json=()
[ -n "${BENCH_JSON:-}" ] && json=(--json "$BENCH_JSON")
# shellcheck disable=SC2086
"$bin" engine-bench --sizes $sizes --engines $specs --dtype "$dtype" --repeat "${REPEAT:-5}" "${json[@]}"
