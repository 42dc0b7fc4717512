#!/usr/bin/env bash
# Two builds side by side on GPUs 0 and 1 of one host, interleaved, ROUNDS rounds (default 3):
# one rank on one GPU beside gpu-bench's cuBLAS, two GPUs device-resident, and two GPUs
# host-resident (--from-host) beside cuBLASXt (xt-bench, 8192 tiles), cublas at f64 and f32 SIZE
# (default 32768); each distmm run --warmup 1 --repeat 3, its median. Lines go to stdout and
# OUT/perf.log (OUT default: a temporary folder), raw outputs beside them.
#   OLD=path/to/old/distmm NEW=path/to/new/distmm bash jobs/bench_before_after_gpu.sh
# Through the device tool: begin with `source .device/env.sh &&` (see docs/building.md).
set -uo pipefail
old=${OLD:?OLD=the old distmm binary} new=${NEW:?NEW=the new distmm binary}
out=${OUT:-$(mktemp -d)} n=${SIZE:-32768}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1}
M=${MPIRUN:-"mpirun --oversubscribe --bind-to none"}
med() { sed -n 's/.*time min \/ median *[0-9.e+-]* s \/ \([0-9.e+-]*\) s.*/\1/p' | head -1; }
say() { echo "$*" | tee -a "$out/perf.log"; }
for r in $(seq "${ROUNDS:-3}"); do
  for dt in f64 f32; do
    CUDA_VISIBLE_DEVICES=0 timeout 120 "$new" gpu-bench --sizes $n --dtype $dt --levels 1 --engines gpu-winograd \
      --repeat 3 --no-error > "$out/gb_${dt}_$r.log" 2>&1
    say "gpu-bench $dt $n r$r: $(grep -i cublas "$out/gb_${dt}_$r.log" | head -2 | tr -s ' ' | tr '\n' '|')"
    for b in old new; do
      bin=$old; [ $b = new ] && bin=$new
      say "np1 cublas $dt $n $b r$r $(CUDA_VISIBLE_DEVICES=0 timeout 120 $M -n 1 "$bin" run --engine cublas --dtype $dt \
        --size $n --warmup 1 --repeat 3 --verify none 2>&1 | med)"
      say "np2 cublas $dt $n $b r$r $(timeout 120 $M -n 2 "$bin" run --engine cublas --dtype $dt --size $n \
        --warmup 1 --repeat 3 --verify none 2>&1 | med)"
      say "np2 from-host cublas $dt $n $b r$r $(timeout 180 $M -n 2 "$bin" run --from-host --engine cublas --dtype $dt \
        --size $n --warmup 1 --repeat 3 --verify none 2>&1 | med)"
    done
    timeout 180 "$new" xt-bench --sizes $n --dtype $dt --gpus 2 --block-dim 8192 --repeat 3 > "$out/xt_${dt}_$r.log" 2>&1
    say "xt-bench $dt $n r$r: $(tail -3 "$out/xt_${dt}_$r.log" | tr -s ' ' | tr '\n' '|')"
  done
done
