#!/usr/bin/env bash
# Installs what building and testing vshmem needs on Debian/Ubuntu (run as root). Installs
# nothing that is already there, so it is cheap to run every time. The CUDA toolkit is optional:
# when nvcc is present (/usr/local/cuda), device code is compiled too. clang-tidy: version 22 where
# the archive has it (Debian 12: bookworm-security), which runs every check of .clang-tidy in half
# the time clang-tidy 14 needs without performance-unnecessary-value-param; else the distribution's
# (tests/tools/clang_tidy.sh then leaves that check out). Clang 22 too where the archive has it: the
# sanitizer trees build with it.
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
# Clang 22 and its sanitizer runtimes for the sanitizer trees (tests/tools/sanitize.sh: GCC
# builds them where it is absent), llvm-symbolizer for their reports: where the archive has them.
clang_pkgs=(clang-22 libclang-rt-22-dev llvm-22)
need_clang=0
for pkg in "${clang_pkgs[@]}"; do installed "$pkg" || need_clang=1; done
# Looked up in the package lists already on the machine, or after the update below.
clang_known() { apt-cache show clang-22 >/dev/null 2>&1; }
if ((${#need[@]} || need_tidy)) || { ((need_clang)) && clang_known; }; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  if ((need_tidy)); then
    if apt-cache show clang-tidy-22 >/dev/null 2>&1; then need+=(clang-tidy-22); else need+=(clang-tidy); fi
  fi
  if ((need_clang)) && clang_known; then need+=("${clang_pkgs[@]}"); fi
  if ((${#need[@]})); then
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
fi
