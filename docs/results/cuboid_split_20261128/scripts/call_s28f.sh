#!/usr/bin/env bash
# Session 28, call 5 (one GPU): gpu-ozaki's passes, warm (the last call's profile), on the local
# product of a 2x2x1 grid at f64 49152 and 32768 and on f32 16384 and 32768 (issue 43's sizes).
source .device/env.sh
nvidia-smi -L
for s in "f64 24576 24576 49152" "f64 16384 16384 32768" "f64 32768 32768 32768" "f32 16384 16384 16384" "f32 32768 32768 32768"; do
  set -- $s
  echo "profile $1 ${2}x${3}x${4}: $(DISTMM_EMULATION_PROFILE=1 timeout 120 build-dev/distmm run --engine gpu-ozaki --dtype $1 --m $2 --n $3 --k $4 --warmup 2 --repeat 1 --verify none 2>&1 | grep "^emulation" | tail -1)"
done
