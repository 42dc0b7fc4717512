#!/usr/bin/env bash
# Session 28, call 6 (one GPU): f64 49152 with gpu-winograd-ozaki (one Winograd level over the
# emulated leaves) beside gpu-ozaki and cuBLAS, errors against cuBLAS's; and the local product
# of a 2x2x1 grid (24576 x 24576 x 49152) with each.
source .device/env.sh
nvidia-smi -L
timeout 200 build-dev/distmm gpu-bench --dtype f64 --sizes 49152 --engines gpu-ozaki gpu-winograd-ozaki --levels 1 --repeat 2 2>&1 | grep "^|\|error" | grep -v "^| n \|^|---"
for e in gpu-winograd-ozaki gpu-ozaki; do
  echo "$e f64 24576x24576x49152: $(timeout 120 build-dev/distmm run --engine $e --dtype f64 --m 24576 --n 24576 --k 49152 --warmup 1 --repeat 3 2>&1 | grep -E 'time min|verif|engine ' | tr -s ' ' | tr '\n' '|')"
done
