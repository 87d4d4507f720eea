# The stall watch (runtime/common/stall_watch.hpp): calls that do not return are reported, with
# what every thread of the process is doing.
vshmem_add_unit_test(NAME stall_watch_test SOURCES stall_watch_test.cpp LIBS vshmem)
