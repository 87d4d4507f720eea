# OpenSHMEM conformance (issue #15): one small program per behaviour.

# shmem_align up to 1 GiB: the budget leaves room for a 1 GiB-aligned block beside the runtime's
# own objects (physical memory is committed only where it is touched on the host backend).
vshmem_add_mpe_test(NAME align_large SOURCES align_large.c NPES 1 2 3 4 LAUNCHERS vshmemrun TIMEOUT 120
                    ENV SHMEM_SYMMETRIC_SIZE=3G)
vshmem_add_mpe_test(NAME align_large_mpirun TARGET mpe_align_large NPES 2 LAUNCHERS mpi
                    NO_GPU_RERUN ENV SHMEM_SYMMETRIC_SIZE=3G)

# OpenSHMEM 1.6 additions (signal_add/set, pe_quiet, ibput/ibget, query_initialized/finalized,
# counted initialization) and their bad input.
vshmem_add_mpe_test(NAME spec16 SOURCES spec16.c NPES 1 2 3 4 8 LAUNCHERS vshmemrun TIMEOUT 60)
vshmem_add_mpe_test(NAME spec16_mpirun TARGET mpe_spec16 NPES 2 3 LAUNCHERS mpi pmix NO_GPU_RERUN)
function(_spec16_error name regex)
  vshmem_add_mpe_test(NAME spec16_${name} TARGET mpe_spec16 ARGS ${name} NPES 2 LAUNCHERS vshmemrun
                      NO_GPU_RERUN WILL_FAIL_REGEX "${regex}")
endfunction()
_spec16_error(pe_quiet_bad_pe "PE [01]: shmem_pe_quiet: target_pes\\[1\\] = 2 is not a valid PE")
_spec16_error(ibput_stride0 "PE [01]: shmem_long_ibput: strides must be at least 1 \\(dst 0")
_spec16_error(ibget_outside "PE [01]: shmem_long_ibget: source .* is not inside the symmetric heap")
_spec16_error(signal_add_not_symmetric "PE [01]: shmem_signal_add: dest .* is not inside the symmetric heap")

# The profiling interface: a tool library wraps a few shmem_* routines and forwards to pshmem_*.
add_library(vshmem_test_pshmem_tool SHARED pshmem_tool.c)
target_link_libraries(vshmem_test_pshmem_tool PRIVATE vshmem)
add_executable(mpe_pshmem_profile pshmem_profile.c)
# The tool comes first in the link, so its shmem_* definitions are found before libvshmem's.
target_link_libraries(mpe_pshmem_profile PRIVATE vshmem_test_pshmem_tool vshmem)
target_include_directories(mpe_pshmem_profile PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
vshmem_add_mpe_test(NAME pshmem_profile TARGET mpe_pshmem_profile NPES 1 2 3 LAUNCHERS vshmemrun
                    TIMEOUT 60)
vshmem_add_mpe_test(NAME pshmem_profile_mpirun TARGET mpe_pshmem_profile NPES 2 LAUNCHERS mpi
                    NO_GPU_RERUN)
