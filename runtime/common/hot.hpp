// VSHMEM_HOT marks the functions on the path of every host-initiated operation (the RMA and AMO
// entry points, their dispatch, the remote path and the UCX plugin's post/wait loop, a wait's
// poll). GCC places such functions in .text.hot, which the linker lays out together at the start
// of .text: an operation then runs from a few code pages instead of one page per layer. On a
// virtual machine where every system call flushes the TLB (no PCID: the 2-core CI box; measured
// there, each distinct page touched after a system call costs 5-9 ns), a remote operation that
// makes one or two system calls pays for every page its layers touch (bench/RESULTS.md, issue #13
// session 21).
#pragma once

#define VSHMEM_HOT __attribute__((hot))
