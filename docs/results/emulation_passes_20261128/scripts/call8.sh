#!/usr/bin/env bash
# Session 29, 4 GPUs: cuboid 2x2x1 with gpu-ozaki at 32768 after the emulation's passes (new)
# against main before the session (base), two rounds alternating, with the new engine's one-GPU
# gpu-bench references (issue 42, item 1's efficiency).
source .device/env.sh
export NCCL_NVLS_ENABLE=0 DISTMM_TUNING_FILE=docs/results/tuning_h100.json
M="mpirun --oversubscribe --bind-to none"
N=32768
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
nvidia-smi -L
start=$SECONDS
for dt in f64 f32; do for bin in build-old/distmm_base build-s29/distmm; do
  echo "1gpu $dt $bin"; CUDA_VISIBLE_DEVICES=0 timeout 100 $bin gpu-bench --dtype $dt --sizes $N --engines gpu-ozaki --repeat 3 --no-error 2>&1 | grep -E "^\| [0-9]"
done; done
echo "refs: $((SECONDS-start)) s"
for r in 1 2; do
  for dt in f64 f32; do
    for b in base new; do
      bin=build-old/distmm_base; [ $b = new ] && bin=build-s29/distmm
      echo "$dt gpu-ozaki $b r$r $(timeout 90 $M -n 4 $bin run --algo cuboid --engine gpu-ozaki --dtype $dt --size $N --warmup 1 --repeat 3 --verify none 2>&1 | med)"
    done
  done
  echo "round $r: $((SECONDS-start)) s"
done
for dt in f64 f32; do
  echo "verified new $dt: $(timeout 90 $M -n 4 build-s29/distmm run --algo cuboid --engine gpu-ozaki --dtype $dt --size $N --warmup 0 --repeat 1 2>&1 | grep -iE "verif|cuboids|moduli" | tr '\n' '|')"
done
echo "total: $((SECONDS-start)) s"
