#!/usr/bin/env bash
# The MPI tests with GPU engines, one rank per GPU, at 1 rank, and at 2 and 4 where that many GPUs
# are seen; then calibrate --device on them.
# Without a GPU it exits 77, which ctest reports as skipped, so a CI log without a GPU says
# that these tests did not run (the engines' own unit tests skip themselves too).
# usage: gpu_tests.sh DISTMM DISTMM_MPI_TESTS MPIEXEC
set -u
bin=$1 tests=$2 mpiexec=${3:-mpiexec}
seen=$("$bin" info 2>/dev/null | sed -n 's/^ *GPUs seen *//p')
gpus=$(printf '%s\n' "$seen" | sed -n 's/^\([0-9][0-9]*\) x .*/\1/p')
if [ -z "$gpus" ]; then
  echo "gpu_tests: skipped, no GPU seen (distmm info: ${seen:-no GPU line})"
  exit 77
fi
filter='DeviceRun*:*Gpu*:StreamPlan*:NcclComm*'
status=0
for np in 1 2 4; do
  [ "$np" -le "$gpus" ] || continue
  echo "gpu_tests: $np rank(s) on $seen"
  NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} "$mpiexec" -n "$np" --oversubscribe --bind-to none "$tests" \
    --gtest_color=no --gtest_filter="$filter" || status=1
done
# calibrate --device on the GPUs (cuBLAS, two small sizes): a device section that auto then reads.
np=$([ "$gpus" -ge 2 ] && echo 2 || echo 1)
m=$(mktemp)
if NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} "$mpiexec" -n "$np" --oversubscribe --bind-to none "$bin" calibrate --device \
     --engine cublas --sizes 1024 2048 --file "$m" &&
   DISTMM_MACHINE_FILE="$m" NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} "$mpiexec" -n "$np" --oversubscribe --bind-to none \
     "$bin" plan --engine cublas --size 4096 | grep -q "auto (device model).*distmm calibrate --device on cublas"; then
  echo "gpu_tests: calibrate --device, then auto reads it: ok"
else
  echo "gpu_tests: calibrate --device: FAILED"; status=1
fi
rm -f "$m"
exit $status
