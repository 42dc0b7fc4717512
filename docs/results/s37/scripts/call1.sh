#!/usr/bin/env bash
# Session 37, call 1 (one H200): main's binary (build-run/distmm, 4ec0c82). Where the time of the
# memory-bound passes goes: the per-pass profile at f32 16384 and 32768, f64 16384; then, where
# Nsight Compute is on the machine, the CRT, slices+sums, fold and sums kernels at f64 16384.
source .device/env.sh
export DISTMM_TUNING_FILE=docs/results/tuning_h100.json NCCL_NVLS_ENABLE=0
B=build-run
start=$SECONDS
for c in "f32 16384" "f32 32768" "f64 16384"; do
  set -- $c
  DISTMM_EMULATION_PROFILE=1 timeout 60 $B/distmm gpu-bench --dtype $1 --sizes $2 --engines gpu-ozaki --repeat 1 \
    --no-error > $OUT/profile_$1_$2.txt 2>&1
  grep -E "^emulation" $OUT/profile_$1_$2.txt | tail -1 | cut -c1-520
done
echo "profiles: $((SECONDS-start)) s"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}"
if [ -n "$NCU" ]; then
  timeout 240 $NCU --target-processes all -k 'regex:crt_combine|to_slices_and_sums|fold_winograd|outer_stats' -c 8 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    $B/distmm gpu-bench --dtype f64 --sizes 16384 --engines gpu-ozaki --repeat 1 --no-error > $OUT/ncu_f64_16384.txt 2>&1
  echo "ncu rc $?"
  grep -E "crt_combine|to_slices_and_sums|fold_winograd|outer_stats|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Theoretical Occupancy|Block Limit|Stall|ERR" $OUT/ncu_f64_16384.txt | head -120
fi
echo "total: $((SECONDS-start)) s"
