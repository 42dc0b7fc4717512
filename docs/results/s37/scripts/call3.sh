#!/usr/bin/env bash
# Session 37, call 3: the SASS of main's CRT and slices+sums kernels (cuobjdump on the GPU machine).
B=build-run
CU=/usr/local/cuda/bin
$CU/cuobjdump -sass $B/distmm > /tmp/all.sass 2>&1
echo "rc $? $(wc -l < /tmp/all.sass) lines"
awk '/Function : .*crt_combine|Function : .*to_slices_and_sums|Function : .*fold_winograd/{f=1} /Function : /{if ($0 !~ /crt_combine|to_slices_and_sums|fold_winograd/) f=0} f' /tmp/all.sass | gzip > $OUT/kernels.sass.gz
ls -la $OUT
