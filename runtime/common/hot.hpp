// VSHMEM_HOT marks the functions on the path of every host-initiated operation below its C entry
// point: the dispatch (runtime_for, rma_*), a wait's poll (Backoff), the remote path and the UCX
// plugin's post/wait/progress loop. GCC places such functions in .text.hot, which the linker lays
// out together at the start of .text: an operation then runs from a few code pages instead of one
// page per layer. On a virtual machine whose system calls leave the TLB or the caches cold (the
// 2-core CI box: each distinct page read right after a system call cost 2.5-9 ns more than
// without it), a remote operation, which makes one or two system calls, pays for every page its
// layers touch (bench/RESULTS.md, issue #13 session 21). build.hot_path_layout checks the layout.
#pragma once

#define VSHMEM_HOT __attribute__((hot))
