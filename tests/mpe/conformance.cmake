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
_spec16_error(ibget_outside "PE [01]: shmem_long_ibget: source .* is not a symmetric object")
_spec16_error(signal_add_not_symmetric "PE [01]: shmem_signal_add: dest .* is not a symmetric object")

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

# The default backend for unmodified OpenSHMEM programs (no device library): the host heap, and
# SHMEM_INFO says so and why. CPU stores and loads on symmetric objects work.
vshmem_add_mpe_test(NAME cpu_access SOURCES cpu_access.c NPES 1 2 4 LAUNCHERS vshmemrun
                    NO_GPU_RERUN ENV SHMEM_INFO=1)
foreach(_n 1 2 4)
  set_tests_properties(mpe.cpu_access.vshmemrun.${_n} PROPERTIES PASS_REGULAR_EXPRESSION
    "symmetric heap is in host memory: VSHMEM_BACKEND=auto and the program does not link the vshmem device library.*cpu_access: OK")
endforeach()
# On the GPU heap the CPU's first store faults: the job ends with the report, not a bare crash.
vshmem_launch_command(_cmd vshmemrun 2)
add_test(NAME gpu.cpu_access_fault.2 COMMAND ${VSHMEM_GPU_OR_SKIP} ${CMAKE_COMMAND}
         "-DREGEX=PE [01]: the CPU accessed 0x[0-9a-f]+, inside the symmetric heap, which is GPU memory.*VSHMEM_BACKEND=host"
         -P ${PROJECT_SOURCE_DIR}/cmake/expect_failure.cmake -- ${_cmd} $<TARGET_FILE:mpe_cpu_access>)
set_tests_properties(gpu.cpu_access_fault.2 PROPERTIES LABELS "gpu;mpe" TIMEOUT 60
                     SKIP_RETURN_CODE 77 RESOURCE_LOCK gpu
                     ENVIRONMENT "VSHMEM_BOOTSTRAP_TIMEOUT=60;VSHMEM_BACKEND=cuda")
# A program that links the device library: auto tries GPU memory, and SHMEM_INFO says so.
if(TARGET vshmem_device)
  vshmem_add_mpe_test(NAME cpu_access_device SOURCES cpu_access_device.cu NPES 1 2
                      LAUNCHERS vshmemrun NO_GPU_RERUN ENV SHMEM_INFO=1)
  vshmem_device_link(mpe_cpu_access_device)
  foreach(_n 1 2)
    set_tests_properties(mpe.cpu_access_device.vshmemrun.${_n} PROPERTIES PASS_REGULAR_EXPRESSION
      "symmetric heap is in (GPU|host) memory: VSHMEM_BACKEND=auto.* the program links the vshmem device library.*cpu_access_device: OK")
  endforeach()
endif()

# Large reductions: the direct (sliced) form on host memory, the pairwise form on staged peers
# and the GPU heap, with scratch reused from call to call.
vshmem_add_mpe_test(NAME reduce_large SOURCES reduce_large.c NPES 1 2 3 4 LAUNCHERS vshmemrun
                    LIBS m TIMEOUT 120)
vshmem_add_mpe_test(NAME reduce_large_staged TARGET mpe_reduce_large NPES 3 LAUNCHERS vshmemrun
                    LAUNCHER_ARGS --simulate-nodes 2 NO_GPU_RERUN TIMEOUT 120)

# The wait policy's override: a malformed value is an error at shmem_init, naming the variable.
vshmem_add_mpe_test(NAME wait_policy_bad_value TARGET mpe_cpu_access NPES 2 LAUNCHERS vshmemrun
                    NO_GPU_RERUN ENV VSHMEM_WAIT=often
                    WILL_FAIL_REGEX "VSHMEM_WAIT='often' is not one of auto\\|spin\\|yield")
# VSHMEM_BIND: shmem_init binds unbound PEs that do not outnumber the CPUs, one CPU each.
vshmem_add_mpe_test(NAME bind_cpu SOURCES bind_cpu.c NPES 1 2 3 LAUNCHERS vshmemrun NO_GPU_RERUN
                    LIBS Threads::Threads
                    ARGS auto)
# Two simulated nodes of this host (the remote path between them): bound only where the host's
# CPUs are scarce, fewer than 4 a PE (the 2-CPU CI machine: bound; the 16-CPU GPU host: not).
if(VSHMEM_HAVE_UCX)
  vshmem_add_mpe_test(NAME bind_cpu_nodes TARGET mpe_bind_cpu NPES 2 LAUNCHERS vshmemrun
                      LAUNCHER_ARGS --simulate-nodes 2 NO_GPU_RERUN ARGS auto nodes)
endif()
vshmem_add_mpe_test(NAME bind_cpu_none TARGET mpe_bind_cpu NPES 2 LAUNCHERS vshmemrun NO_GPU_RERUN
                    ENV VSHMEM_BIND=none ARGS none)
# A bad setting is reported before any bootstrap exists, naming the PE by its launcher's number.
vshmem_add_mpe_test(NAME bind_cpu_bad_value TARGET mpe_bind_cpu NPES 2 LAUNCHERS vshmemrun mpi pmix
                    NO_GPU_RERUN ENV VSHMEM_BIND=always
                    WILL_FAIL_REGEX "vshmem: PE [01]: shmem_init: VSHMEM_BIND='always' is not one of auto\\|none")
vshmem_add_mpe_test(NAME wait_policy_yield TARGET mpe_reduce_large NPES 3 LAUNCHERS vshmemrun
                    NO_GPU_RERUN ENV VSHMEM_WAIT=yield TIMEOUT 120)

# Small collectives back to back: the pushed broadcast and the flat reduce (mailboxes whose
# parity alternates per pair of PEs) on the world team, overlapping active sets and
# SHMEM_TEAM_SHARED, with no barrier between reductions; also when PEs outnumber the cores.
# Host heap only (no gpu.* rerun): the program fills and checks the heap with CPU loads and
# stores, which a GPU heap does not take (gpu.coll_small segfaulted on the H200).
vshmem_add_mpe_test(NAME coll_small SOURCES coll_small.c NPES 2 3 4 5 LAUNCHERS vshmemrun
                    NO_GPU_RERUN TIMEOUT 120)
vshmem_add_mpe_test(NAME coll_small_yield TARGET mpe_coll_small NPES 4 LAUNCHERS vshmemrun
                    NO_GPU_RERUN ENV VSHMEM_WAIT=yield TIMEOUT 120)
vshmem_add_mpe_test(NAME coll_small_mpirun TARGET mpe_coll_small NPES 3 LAUNCHERS mpi
                    TIMEOUT 120)

# Races of the pushed collectives: back-to-back broadcasts right after shmem_barrier_all and
# alltoalls with no barrier between them, fresh data every call, every value checked; with waits
# that sleep (VSHMEM_WAIT=yield, and 4 PEs on a 2-core machine) and that spin.
vshmem_add_mpe_test(NAME coll_race SOURCES coll_race.c NPES 2 4 LAUNCHERS vshmemrun NO_GPU_RERUN
                    TIMEOUT 180)
vshmem_add_mpe_test(NAME coll_race_yield TARGET mpe_coll_race NPES 3 LAUNCHERS vshmemrun
                    NO_GPU_RERUN ENV VSHMEM_WAIT=yield TIMEOUT 180)

# The pushed alltoall writes the members in the order they enter the call: one member that enters
# a second late does not hold up the blocks the others exchange (host heap: a watcher thread loads
# dest).
vshmem_add_mpe_test(NAME alltoall_late SOURCES alltoall_late.c NPES 3 4 LAUNCHERS vshmemrun
                    NO_GPU_RERUN TIMEOUT 60)

# Waits on one node sleep on the PE's wake word (runtime/transport/host_wake.hpp) and the store
# they wait for wakes them: out soon after the last PE arrives, and (PEs outnumbering the cores)
# little CPU while waiting.
vshmem_add_mpe_test(NAME wait_sleep SOURCES wait_sleep.c NPES 2 4 LAUNCHERS vshmemrun
                    NO_GPU_RERUN ENV VSHMEM_WAIT=yield TIMEOUT 60)
vshmem_add_mpe_test(NAME wait_sleep_spin TARGET mpe_wait_sleep NPES 2 LAUNCHERS vshmemrun
                    NO_GPU_RERUN ENV VSHMEM_WAIT=spin TIMEOUT 60)

# shmem_barrier_all on one node gathers at PE 0 when the waits of every PE yield (sync.cpp): data
# of every round checked after it, PE 0 and each member arriving late in turn (woken soon after).
# With the PEs' VSHMEM_WAIT differing (PE 1 spins), every PE must take the dissemination barrier
# instead, or the two barriers never meet (the test then times out).
vshmem_add_mpe_test(NAME barrier_gathered SOURCES barrier_gathered.c NPES 2 3 4 8
                    LAUNCHERS vshmemrun NO_GPU_RERUN ENV VSHMEM_WAIT=yield TIMEOUT 120)
if("vshmemrun" IN_LIST VSHMEM_TEST_LAUNCHERS)
  vshmem_launch_command(_cmd vshmemrun 4)
  add_test(NAME mpe.barrier_mixed_wait.vshmemrun.4
           COMMAND ${_cmd} ${CMAKE_CURRENT_SOURCE_DIR}/per_pe_env.sh 1 VSHMEM_WAIT=spin
                   $<TARGET_FILE:mpe_barrier_gathered>)
  set_tests_properties(mpe.barrier_mixed_wait.vshmemrun.4 PROPERTIES LABELS "mpe;vshmemrun"
                       TIMEOUT 60 ENVIRONMENT "VSHMEM_BOOTSTRAP_TIMEOUT=60;VSHMEM_WAIT=yield")
endif()

# Waits on data (wait_until and its _any form, signal_wait_until, the lock) sleep on the PE's
# data wake word and the put or atomic they wait for wakes them (runtime/transport/mapped_path.hpp).
# A sleep nobody wakes lasts VSHMEM_WAIT_LOOK_US: 100 ms here, so that a missing wake shows.
vshmem_add_mpe_test(NAME wait_until_sleep SOURCES wait_until_sleep.c NPES 2 4 LAUNCHERS vshmemrun
                    NO_GPU_RERUN ENV VSHMEM_WAIT=yield VSHMEM_WAIT_LOOK_US=100000 TIMEOUT 60)
vshmem_add_mpe_test(NAME wait_until_sleep_spin TARGET mpe_wait_until_sleep NPES 2
                    LAUNCHERS vshmemrun NO_GPU_RERUN ENV VSHMEM_WAIT=spin
                    VSHMEM_WAIT_LOOK_US=100000 TIMEOUT 60)
# A store through shmem_ptr wakes nobody: the sleeping wait_until still sees it within
# VSHMEM_WAIT_LOOK_US (1 ms by default).
vshmem_add_mpe_test(NAME wait_until_sleep_ptr TARGET mpe_wait_until_sleep NPES 2
                    LAUNCHERS vshmemrun NO_GPU_RERUN ENV VSHMEM_WAIT=yield TIMEOUT 60)
