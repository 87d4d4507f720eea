#!/usr/bin/env bash
# Installs what building and testing vshmem needs on Debian/Ubuntu (run as root). Installs
# nothing that is already there, so it is cheap to run every time. The CUDA toolkit is optional:
# when nvcc is present (/usr/local/cuda), device code is compiled too. LLVM 22 where the archive has
# it (Debian 12: bookworm-security), even where an older clang-tidy is installed (Debian 12 images
# come with clang-tidy 14): clang-tidy 22 runs every check of .clang-tidy in less than half the
# CPU clang-tidy 14 needs without performance-unnecessary-value-param (144 against 306 s here,
# session 33), and Clang 22 builds the sanitizer trees (tests/tools/sanitize.sh) in 0.69 of GCC's
# CPU; llvm-symbolizer names file:line in their reports. Elsewhere the distribution's clang-tidy
# (tests/tools/clang_tidy.sh then leaves that check out) and GCC.
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
llvm22=(clang-tidy-22 clang-22 libclang-rt-22-dev llvm-22)
need_llvm22=0
for pkg in "${llvm22[@]}"; do installed "$pkg" || need_llvm22=1; done
# Looked up in the package lists already on the machine, or after the update below.
llvm22_known() { apt-cache show clang-22 clang-tidy-22 >/dev/null 2>&1; }
if ((${#need[@]} || need_tidy)) || { ((need_llvm22)) && llvm22_known; }; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  if ((need_llvm22)) && llvm22_known; then
    need+=("${llvm22[@]}")
  elif ((need_tidy)); then
    need+=(clang-tidy)
  fi
  if ((${#need[@]})); then
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
fi
