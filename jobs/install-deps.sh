#!/usr/bin/env bash
# Installs the Debian packages distmm needs, only those missing (apt-get; sudo when not root).
set -euo pipefail
pkgs=(g++ cmake make libopenmpi-dev openmpi-bin libopenblas-dev libscalapack-openmpi-dev
      libgtest-dev libcli11-dev nlohmann-json3-dev python3-numpy python3-matplotlib clang libclang-rt-14-dev
      scalapack-mpi-test gfortran python3-mpi4py ${DISTMM_EXTRA_PKGS:-})
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
