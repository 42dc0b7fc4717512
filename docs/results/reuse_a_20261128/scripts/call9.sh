#!/usr/bin/env bash
# Session 30, call 9 (nvidia-h200: 16 CPU cores, nothing else running): issue 41's P = 16 rows
# through MultiplyPlan (layout-bench) against PDGEMM on the same arrays, one rank per core, one
# thread each, the k-heavy shape first (the open target), then the square one; COSMA skipped
# (its P = 16 rows of session 24 are 1.03-3.7x behind ours).
source .device/env.sh
lscpu | grep -E "Model name|^CPU\(s\)|Thread|MHz" | head -5
start=$SECONDS
PS=16 SHAPES="4096x4096x65536 8192x8192x8192" ROUNDS=1 REPEAT=3 NO_COSMA=1 OUT=$OUT/layouts \
  bash jobs/bench_layouts.sh build-s30/distmm 2>&1 | grep -v pmix | tail -12
echo "total: $((SECONDS-start)) s"
