#!/usr/bin/env bash
# Builds the .npy header fuzz target with Debian's clang (libFuzzer, ASan, UBSan) and runs it for
# a bounded time (FUZZ_SECONDS, default 60) from the seed corpus in tests/fuzz/corpus.
# usage: run_fuzz.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
secs=${FUZZ_SECONDS:-60}
cxx=$(command -v clang++ || command -v clang++-14 || true)
if [ -z "$cxx" ]; then echo "clang++ not found: bash jobs/install-deps.sh installs it"; exit 1; fi
"$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$src" "$src/src/core/npy.cpp" "$src/tests/fuzz/npy_header_fuzz.cpp" -o "$build/npy_header_fuzz"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$src"/tests/fuzz/corpus/* "$work/"
"$build/npy_header_fuzz" -max_total_time="$secs" -max_len=4096 -print_final_stats=1 "$work" 2>&1 | tail -15
