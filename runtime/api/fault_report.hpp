// When the symmetric heap is GPU memory, the CPU cannot load or store it, and ordinary OpenSHMEM
// C code that touches a symmetric object directly dies of SIGSEGV. While such a heap exists, a
// SIGSEGV/SIGBUS handler turns a fault inside the heap's range into a message naming the PE, the
// address and the cause (and how to choose the host heap), then hands the signal on: to the
// handler that was installed before, or to the default action, so the process still ends by the
// signal (core dumps and launchers see what they saw before). Faults elsewhere pass through
// untouched. The handler only writes (async-signal-safe) and reports once.
#pragma once

#include <cstdint>

namespace vshmem::detail {

// Reports faults in [begin, end) as CPU accesses to GPU memory of PE my_pe. Installing again
// replaces the range; the handler that was there before the first install is kept for chaining.
void install_fault_report(int my_pe, uintptr_t begin, uintptr_t end);
// Puts the previous handlers back (if ours are still the installed ones) and forgets the range.
void remove_fault_report();

}  // namespace vshmem::detail
