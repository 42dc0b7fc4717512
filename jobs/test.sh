#!/usr/bin/env bash
# Install, build, and run every test (unit, MPI at 1..16 ranks, command line).
set -euo pipefail
cd "$(dirname "$0")/.."
bash jobs/build.sh
ctest --test-dir build --output-on-failure "$@"
