# Bootstrap layer unit tests (single test binary that forks its own PEs).
vshmem_add_unit_test(NAME bootstrap_test SOURCES bootstrap_test.cpp LIBS vshmem)
