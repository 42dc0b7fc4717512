#!/usr/bin/env bash
# Session 28, call 4 (one GPU): gpu-ozaki f64 on the whole product and on the local product of a
# 2x2x1 grid, at 32768 and 49152 (does the emulation lose rate on the quarter shape?), with the
# emulation's pass profile for the local shapes.
source .device/env.sh
nvidia-smi -L
for s in "49152 49152 49152" "24576 24576 49152" "32768 32768 32768" "16384 16384 32768"; do
  set -- $s
  echo "gpu-ozaki f64 ${1}x${2}x${3}: $(timeout 120 build-dev/distmm run --engine gpu-ozaki --dtype f64 --m $1 --n $2 --k $3 --warmup 1 --repeat 3 --verify none 2>&1 | grep -E 'time min|engine ' | tr -s ' ' | tr '\n' '|')"
done
for s in "24576 24576 49152" "49152 49152 49152"; do
  set -- $s
  echo "profile ${1}x${2}x${3}:"
  DISTMM_EMULATION_PROFILE=1 timeout 120 build-dev/distmm run --engine gpu-ozaki --dtype f64 --m $1 --n $2 --k $3 --warmup 0 --repeat 1 --verify none 2>&1 | grep "^emulation" | head -4
done
