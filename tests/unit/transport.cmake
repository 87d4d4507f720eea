vshmem_add_unit_test(NAME transport_test SOURCES transport_test.cpp LIBS vshmem)
