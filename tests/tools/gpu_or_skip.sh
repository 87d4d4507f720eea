#!/usr/bin/env bash
# Runs the command when this machine has a usable NVIDIA GPU; otherwise exits 77, which CTest
# reports as skipped (never as passed).
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' && ! [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ]; then
  echo "skipped: no CUDA driver (libcuda.so.1) on this machine"
  exit 77
fi
if command -v nvidia-smi >/dev/null 2>&1 && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: nvidia-smi sees no GPU"
  exit 77
fi
exec "$@"
