#!/usr/bin/env bash
# A newcomer's first run: install, build, then the main job on its built-in default problem
# (1024 x 1024 x 1024, f64) on 4 ranks with SUMMA/Cannon chosen automatically, verified in full.
set -euo pipefail
cd "$(dirname "$0")/.."
bash jobs/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1   # containers run as root
mpirun -n 4 --oversubscribe build/distmm run --verify full "$@"
