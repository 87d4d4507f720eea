vshmem_add_unit_test(NAME allocator_test SOURCES allocator_test.cpp LIBS vshmem)
vshmem_add_unit_test(NAME env_test SOURCES env_test.cpp LIBS vshmem)
vshmem_add_unit_test(NAME host_memory_test SOURCES host_memory_test.cpp LIBS vshmem)
vshmem_add_unit_test(NAME fault_report_test SOURCES fault_report_test.cpp LIBS vshmem)
