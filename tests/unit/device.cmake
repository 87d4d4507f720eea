# The device library's registration with the host runtime (no GPU needed).
if(TARGET vshmem_device)
  vshmem_add_unit_test(NAME device_registration_test
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/device_registration_test.cu
                       LIBS vshmem ${CMAKE_DL_LIBS})
  vshmem_device_link(device_registration_test)
  # The listener's call counter is found with dlsym in the executable.
  set_target_properties(device_registration_test PROPERTIES ENABLE_EXPORTS ON)
endif()
