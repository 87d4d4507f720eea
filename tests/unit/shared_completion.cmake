# The UCX plugin's shared completion (runtime/transport/shared_completion.hpp): no UCX needed.
vshmem_add_unit_test(NAME shared_completion_test SOURCES shared_completion_test.cpp)
