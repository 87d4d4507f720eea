// The deadlock watch: a one-node job in which every PE has waited inside a vshmem call for
// VSHMEM_DEADLOCK_S seconds is deadlocked, since only a vshmem call of another PE (a put, an
// atomic, a signal, a barrier's arrival) can end such a wait, and none is making one. Each PE's
// long waits (Backoff, past their first 50 ms: about once a second) publish what they wait in
// (HostSyncArea::WaitRecord, in the node-shared page of the PE); PE 0's look at every PE's record.
// When every record has been there for the limit, PE 0 ends the job with a message naming each
// PE's call and how long it has waited, instead of leaving it to hang.
//
// The judgement is certain only where nothing outside vshmem can write what a PE waits for: a
// PE of thread level SHMEM_THREAD_SINGLE (shmem_init's: the program is not multithreaded) on the
// host heap without device code (no kernel can store into it). Where some PE is not certain (its
// other threads, or its GPU's kernels, may still end the wait), PE 0 only warns, once. Jobs of
// several nodes share no such page: not watched.
#pragma once

#include <cstdint>

#include "runtime/common/status.hpp"

namespace vshmem::detail {

struct Runtime;

// shmem_init, once the provider exists: reads VSHMEM_DEADLOCK_S and decides whether this PE's
// waits are certain (above).
Status configure_deadlock_watch(const Runtime& rt);

// A long wait of `call` that began at since_ns (monotonic clock): publishes it under *token
// (0 the first time: a fresh token is taken) and, on PE 0, judges the job. May end the job.
void note_long_wait(const char* call, uint64_t since_ns, uint64_t* token);

// The wait that published under token ended (nothing when token is 0 or the record holds another
// wait's).
void end_long_wait(uint64_t token);

}  // namespace vshmem::detail
