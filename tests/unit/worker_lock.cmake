# The UCX plugin's worker lock (runtime/transport/worker_lock.hpp): no UCX needed.
vshmem_add_unit_test(NAME worker_lock_test SOURCES worker_lock_test.cpp)
