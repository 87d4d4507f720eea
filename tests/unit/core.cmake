vshmem_add_unit_test(NAME allocator_test SOURCES allocator_test.cpp LIBS vshmem)
vshmem_add_unit_test(NAME env_test SOURCES env_test.cpp LIBS vshmem)
vshmem_add_unit_test(NAME host_memory_test SOURCES host_memory_test.cpp LIBS vshmem)
vshmem_add_unit_test(NAME fault_report_test SOURCES fault_report_test.cpp LIBS vshmem)
vshmem_add_unit_test(NAME wait_policy_test SOURCES wait_policy_test.cpp LIBS vshmem)
vshmem_add_unit_test(NAME fd_passing_test SOURCES fd_passing_test.cpp LIBS vshmem)
vshmem_add_unit_test(NAME handle_exchange_test SOURCES handle_exchange_test.cpp LIBS vshmem)
vshmem_add_unit_test(NAME gather_round_test SOURCES gather_round_test.cpp LIBS vshmem)
vshmem_add_unit_test(NAME data_segment_test SOURCES data_segment_test.cpp LIBS vshmem)
# The collective logic with threads as PEs (tests/support/thread_bootstrap.hpp): injected
# refusals, delays and deaths.
vshmem_add_unit_test(NAME va_agreement_test SOURCES va_agreement_test.cpp LIBS vshmem)
vshmem_add_unit_test(NAME heap_growth_test SOURCES heap_growth_test.cpp LIBS vshmem)
vshmem_add_unit_test(NAME transport_plan_test SOURCES transport_plan_test.cpp LIBS vshmem)
