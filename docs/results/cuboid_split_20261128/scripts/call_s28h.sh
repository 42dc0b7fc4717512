#!/usr/bin/env bash
# Session 28, call 7 (one GPU): gpu-ozaki f64 on the local products of 4x1x1 and 1x4x1 grids at
# 49152 (and 4x1x1 at 32768), against the 2x2x1 grid's local product.
source .device/env.sh
for s in "12288 49152 49152" "49152 12288 49152" "8192 32768 32768"; do
  set -- $s
  echo "gpu-ozaki f64 ${1}x${2}x${3}: $(timeout 120 build-dev/distmm run --engine gpu-ozaki --dtype f64 --m $1 --n $2 --k $3 --warmup 1 --repeat 3 --verify none 2>&1 | grep -E 'time min' | tr -s ' ' | tr '\n' '|')"
  echo "  $(DISTMM_EMULATION_PROFILE=1 timeout 120 build-dev/distmm run --engine gpu-ozaki --dtype f64 --m $1 --n $2 --k $3 --warmup 1 --repeat 1 --verify none 2>&1 | grep "^emulation" | tail -1)"
done
