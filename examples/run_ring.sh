#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine (as root): installs what is missing, builds, and
# runs the ring example across 4 PEs on the default backend (host memory: the ring is a plain C
# program that reaches symmetric objects with the CPU and does not link the device library).
set -euo pipefail
cd "$(dirname "$0")/.."
tests/tools/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)" --target ring vshmemrun
build/bin/vshmemrun -n 4 build/bin/ring
