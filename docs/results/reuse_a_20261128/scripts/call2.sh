#!/usr/bin/env bash
# Session 30, call 2 (4 GPUs): cuboid 2x2x1 with gpu-ozaki at 32768, main before the session
# (base) against ReuseOfA (new: the parts of step 0 take op(A)'s statistics, magnitudes and
# slices from the part before), three rounds alternating, with one-GPU gpu-bench references from
# GPU 0 of the same job (issue 42, item 1's efficiency).
source .device/env.sh
export NCCL_NVLS_ENABLE=0 DISTMM_TUNING_FILE=docs/results/tuning_h100.json
M="mpirun --oversubscribe --bind-to none"
N=${N:-32768}
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
nvidia-smi -L
start=$SECONDS
for dt in f64 f32; do
  echo "1gpu $dt"; CUDA_VISIBLE_DEVICES=0 timeout 100 build-s30/distmm gpu-bench --dtype $dt --sizes $N --engines gpu-ozaki --repeat 3 --no-error 2>&1 | grep -E "^\| [0-9]"
done
echo "refs: $((SECONDS-start)) s"
for r in 1 2 3; do
  for dt in f64 f32; do
    for b in base new; do
      bin=build-base/distmm; [ $b = new ] && bin=build-s30/distmm
      [ $r = 2 ] && { [ $b = base ] && bin=build-s30/distmm || bin=build-base/distmm; }  # (order alternates)
      echo "$dt gpu-ozaki $([ $bin = build-s30/distmm ] && echo new || echo base) r$r $(timeout 90 $M -n 4 $bin run --algo cuboid --engine gpu-ozaki --dtype $dt --size $N --warmup 1 --repeat 3 --verify none 2>&1 | med)"
    done
  done
  echo "round $r: $((SECONDS-start)) s"
done
for dt in f64 f32; do
  echo "verified new $dt: $(timeout 90 $M -n 4 build-s30/distmm run --algo cuboid --engine gpu-ozaki --dtype $dt --size $N --warmup 0 --repeat 1 2>&1 | grep -iE "verif|cuboids|moduli|slices" | tr '\n' '|')"
done
echo "total: $((SECONDS-start)) s"
