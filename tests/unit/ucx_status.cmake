# The words of a failed UCX request (runtime/transport/ucx_status.hpp): needs UCX's headers and
# libucs, as the plugin does.
if(VSHMEM_HAVE_UCX)
  vshmem_add_unit_test(NAME ucx_status_test SOURCES ucx_status_test.cpp LIBS vshmem_ucx)
endif()
