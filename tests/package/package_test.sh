#!/usr/bin/env bash
# Installs the built tree into a temporary prefix, builds tests/package against it with
# find_package(distmm), and runs the consumer.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src" -B "$tmp/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/b" -j2 >/dev/null
"$tmp/b/consumer"
