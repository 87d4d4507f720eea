# Bootstrap layer unit tests (single test binary that forks its own PEs).
vshmem_add_unit_test(NAME bootstrap_test SOURCES bootstrap_test.cpp LIBS vshmem)
# The socket hub's time-outs with threads as PEs (tests/support/thread_bootstrap.hpp): late,
# missing and dead PEs named within sub-second limits.
vshmem_add_unit_test(NAME socket_hub_test SOURCES socket_hub_test.cpp LIBS vshmem)
