#!/bin/sh
# Starts (start) or stops (stop) an MPS control daemon for the device tests, so that kernels of
# PEs sharing the GPU run concurrently. It uses the CUDA_MPS_PIPE_DIRECTORY the tests inherit
# (CUDA's default when unset), reuses a daemon already running there (tests/tools/gpu_multi.sh
# starts one) and stops only a daemon it started. Without a GPU or without the MPS binaries it
# does nothing: the tests then skip (no GPU) or run time-sliced (no MPS), and say so.
PIPE=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}
LOG=${CUDA_MPS_LOG_DIRECTORY:-/tmp/nvidia-log}
MARK="$PIPE/.started-by-vshmem-device-tests"
export CUDA_MPS_PIPE_DIRECTORY=$PIPE CUDA_MPS_LOG_DIRECTORY=$LOG
CTL=$(command -v nvidia-cuda-mps-control 2>/dev/null)
[ -z "$CTL" ] && [ -x /usr/local/nvidia/bin/nvidia-cuda-mps-control ] && CTL=/usr/local/nvidia/bin/nvidia-cuda-mps-control
[ -z "$CTL" ] && [ -x /usr/bin/nvidia-cuda-mps-control ] && CTL=/usr/bin/nvidia-cuda-mps-control
if [ -z "$CTL" ]; then
  echo "device_mps: no nvidia-cuda-mps-control: tests run without MPS"
  exit 0
fi
case "$1" in
  start)
    mkdir -p "$PIPE" "$LOG"
    if [ -e "$PIPE/control" ] && echo get_server_list | "$CTL" >/dev/null 2>&1; then
      echo "device_mps: MPS already running ($PIPE)"
      exit 0
    fi
    "$CTL" -d || { echo "device_mps: could not start MPS: tests run without it"; exit 0; }
    touch "$MARK"
    echo "device_mps: MPS started ($PIPE)"
    ;;
  stop)
    if [ -e "$MARK" ]; then
      rm -f "$MARK"
      echo quit | "$CTL" && echo "device_mps: MPS stopped"
    fi
    ;;
esac
exit 0
