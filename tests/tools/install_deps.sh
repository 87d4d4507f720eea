#!/usr/bin/env bash
# Installs what building and testing vshmem needs on Debian/Ubuntu (run as root). Installs
# nothing that is already there, so it is cheap to run every time. The CUDA toolkit is optional:
# when nvcc is present (/usr/local/cuda), device code is compiled too. clang-tidy: version 22 where
# the archive has it (Debian 12: bookworm-security), which runs every check of .clang-tidy in half
# the time clang-tidy 14 needs without performance-unnecessary-value-param; else the distribution's
# (tests/tools/clang_tidy.sh then leaves that check out).
set -euo pipefail
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
need=()
for pkg in cmake g++ make ninja-build pkg-config libgtest-dev libopenmpi-dev openmpi-bin \
           libpmix-dev libucx-dev clang-format python3-dev python3-pybind11 python3-numpy \
           python3-pytest python3-pip libdlpack-dev; do
  installed "$pkg" || need+=("$pkg")
done
need_tidy=0
installed clang-tidy-22 || installed clang-tidy || need_tidy=1
if ((${#need[@]} || need_tidy)); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  if ((need_tidy)); then
    if apt-cache show clang-tidy-22 >/dev/null 2>&1; then need+=(clang-tidy-22); else need+=(clang-tidy); fi
  fi
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
