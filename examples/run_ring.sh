#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine (as root): installs what is missing, builds, and
# runs the ring example across 4 PEs on the default backend (GPU memory when a usable GPU is
# present, host memory otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
tests/tools/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)" --target ring vshmemrun
build/bin/vshmemrun -n 4 build/bin/ring
