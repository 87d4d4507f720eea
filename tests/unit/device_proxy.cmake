# The device proxy's host side (issue #14): the request ring, ordering, back-pressure, fence,
# quiet and signal semantics, failures, with host threads as producers (the same producer code
# as the device's: vshmem/device/impl/proxy_ring.h).
vshmem_add_unit_test(NAME device_proxy_test SOURCES device_proxy_test.cpp LIBS vshmem)
