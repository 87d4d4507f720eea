#!/usr/bin/env bash
# The functions of every host-initiated operation's path (VSHMEM_HOT, runtime/common/hot.hpp) lie
# together: within each library the addresses of the listed functions span at most MAX_SPAN bytes
# (four 4 KiB pages). A function that loses the attribute, or a new layer on the path without it,
# lands elsewhere in .text and fails this. A listed function the compiler inlined into all its
# callers (which are listed too) has no symbol and is skipped; at least half of each list must be
# found, so that renames do not empty the check.
# usage: hot_path_layout.sh LIBVSHMEM [UCX_PLUGIN]
set -euo pipefail
MAX_SPAN=$((16 << 10))
check() {  # object, then the functions (demangled name up to its parameter list)
  local object=$1
  shift
  local symbols
  symbols=$("${NM:-nm}" -C --defined-only "$object" | grep -v '\.cold' || true)
  local lo= hi= name addr found=0
  for name in "$@"; do
    addr=$(grep -F -- " $name(" <<<"$symbols" | awk '{print $1}' | head -1 || true)
    if [[ -z $addr ]]; then
      echo "$object: no symbol for $name (inlined into its callers, or renamed)"
      continue
    fi
    found=$((found + 1))
    addr=$((16#$addr))
    if [[ -z $lo ]] || ((addr < lo)); then lo=$addr; fi
    if [[ -z $hi ]] || ((addr > hi)); then hi=$addr; fi
  done
  if ((found * 2 < $#)); then
    echo "FAIL: $object has only $found of the $# listed functions (renamed? then update the list)"
    return 1
  fi
  local span=$((hi - lo))
  printf '%s: %d of %d functions found, within %d bytes (limit %d)\n' "$object" "$found" "$#" \
    "$span" "$MAX_SPAN"
  if ((span > MAX_SPAN)); then
    "${NM:-nm}" -C --defined-only "$object" | grep -F -e "$(printf '%s(\n' "$@")" | grep -v '\.cold' | sort
    echo "FAIL: the per-operation functions of $object are spread over $span bytes"
    return 1
  fi
}
check "$1" \
  vshmem::detail::runtime_for vshmem::detail::rma_put vshmem::detail::rma_get \
  vshmem::detail::rma_put_nbi vshmem::detail::rma_get_nbi vshmem::detail::rma_atomic \
  vshmem::detail::Backoff::pause vshmem::detail::Backoff::late_sleep \
  vshmem::RemotePath::put vshmem::RemotePath::get vshmem::RemotePath::put_nbi \
  vshmem::RemotePath::get_nbi vshmem::RemotePath::atomic
if [[ $# -ge 2 ]]; then
  check "$2" \
    "(anonymous namespace)::plugin_put" "(anonymous namespace)::plugin_get" \
    "(anonymous namespace)::plugin_atomic" "(anonymous namespace)::plugin_progress" \
    "(anonymous namespace)::plugin_wait_event" "(anonymous namespace)::UcxPath::wait_request" \
    "(anonymous namespace)::UcxPath::ep_of" "(anonymous namespace)::UcxPath::rkey_of" \
    "(anonymous namespace)::UcxPath::progress_once" "(anonymous namespace)::UcxPath::run_work"
fi
