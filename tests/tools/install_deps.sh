#!/usr/bin/env bash
# Installs what building and testing vshmem needs on Debian/Ubuntu (run as root). Installs
# nothing that is already there, so it is cheap to run every time. The CUDA toolkit is optional:
# when nvcc is present (/usr/local/cuda), device code is compiled too.
set -euo pipefail
need=()
for pkg in cmake g++ make pkg-config libgtest-dev libopenmpi-dev openmpi-bin libpmix-dev libucx-dev \
           clang-format clang-tidy python3-dev python3-pybind11 python3-numpy python3-pytest \
           python3-pip libdlpack-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if ((${#need[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
