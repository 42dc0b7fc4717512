#!/usr/bin/env bash
# `distmm calibrate --device` on the emulated device (the device paths over host memory, MPI
# between ranks): it writes a machine file whose device section is valid (engine rates by size,
# the link, the device memory) and keeps the host values beside it; --algo auto on a
# device-resident run then reads it, and `distmm plan` chooses exactly what `distmm run` does.
# Bad options name the fix.
# usage: calibrate_device_test.sh DISTMM MPIEXEC
set -u
source "$(dirname "$0")/cli_checks.sh"  # bin, mpiexec, tmp, ok, bad, expect_error
m="$tmp/machine.json"

# 1. A host calibrate first, then the device one: both sections in one file.
if "$mpiexec" -n 2 --oversubscribe "$bin" calibrate --file "$m" >"$tmp/out" 2>&1 &&
   "$mpiexec" -n 2 --oversubscribe "$bin" calibrate --device --emulate-device --engine blas --sizes 64 128 \
     --file "$m" >"$tmp/out2" 2>&1 && grep -q "saved to" "$tmp/out2" && grep -q "blas f64:" "$tmp/out2"; then
  ok "calibrate --device --emulate-device"
else bad "calibrate --device: $(cat "$tmp/out" "$tmp/out2")"; fi
if /usr/bin/python3 - "$m" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for k in ("flops_per_s", "bytes_per_s", "latency_s"):
    assert j[k] > 0, k                                 # the host values kept
d = j["device"]
assert d["link_bytes_per_s"] > 0 and d["link_latency_s"] > 0 and d["memory_bytes_per_s"] > 0, d
assert d["ranks"] == 2 and "emulated" in d["device"], d
for dt in ("f64", "f32"):
    pts = d["rates"]["blas"][dt]
    assert [p["m"] for p in pts] == [64, 128], pts
    assert all(p["n"] == p["m"] == p["k"] and p["flops_per_s"] > 0 for p in pts), pts
PY
then ok "the device section is valid and the host values kept"
else bad "machine file: $(cat "$m")"; fi
# A host calibrate again keeps the device section.
if "$mpiexec" -n 2 --oversubscribe "$bin" calibrate --file "$m" >"$tmp/out" 2>&1 &&
   /usr/bin/python3 -c "import json,sys; assert 'device' in json.load(open(sys.argv[1]))" "$m"; then
  ok "calibrate keeps the device section"
else bad "calibrate dropped the device section: $(cat "$tmp/out" "$m")"; fi

# 2. auto reads it on a device-resident run, and plan = run (4 ranks).
run_args=(--size 256 --emulate-device --engine blas)
if DISTMM_MACHINE_FILE="$m" "$mpiexec" -n 4 --oversubscribe "$bin" run "${run_args[@]}" >"$tmp/run" 2>&1 &&
   DISTMM_MACHINE_FILE="$m" "$mpiexec" -n 4 --oversubscribe "$bin" plan "${run_args[@]}" >"$tmp/plan" 2>&1 &&
   grep -q "auto (device model)" "$tmp/run" && grep -q "distmm calibrate --device on emulated device" "$tmp/run" &&
   [ "$(grep -E '^ *chosen' "$tmp/run")" = "$(grep -E '^ *chosen' "$tmp/plan")" ] &&
   [ -n "$(grep -E '^ *chosen' "$tmp/run")" ]; then
  ok "auto reads the device model; plan = run"
else bad "auto on the emulated device: $(cat "$tmp/run" "$tmp/plan")"; fi

# 3. Bad options and a bad device section.
expect_error "calibrate --engine without --device" "go with --device" 0 calibrate --engine blas --file "$m"
expect_error "calibrate --device --emulate-device of a GPU engine" "host engine" 0 \
  calibrate --device --emulate-device --engine cublas --file "$tmp/x.json"
expect_error "calibrate --device of a host engine" "add --emulate-device" 0 calibrate --device --engine blas --file "$tmp/x.json"
echo '{"device": {"link_bytes_per_s": -1, "link_latency_s": 1e-5, "memory_bytes_per_s": 1e12, "rates": {}}}' >"$tmp/bad.json"
DISTMM_MACHINE_FILE="$tmp/bad.json" expect_error "a bad device section" \
  "device.link_bytes_per_s -1 is out of range.*distmm calibrate --device" 0 run "${run_args[@]}"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
