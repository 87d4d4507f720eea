# The foundation: heap, RMA, barriers, errors, teardown.
vshmem_add_mpe_test(NAME rma SOURCES rma.c ENV VSHMEM_HEAP_CHUNK_SIZE=1M)
vshmem_add_mpe_test(NAME heap SOURCES heap.c ENV VSHMEM_HEAP_CHUNK_SIZE=1M SHMEM_SYMMETRIC_SIZE=64M)
vshmem_add_mpe_test(NAME teardown SOURCES teardown.c NPES 1 2 4)

# Bad input: each case must fail with a message naming the cause.
add_executable(mpe_errors errors.c)
target_link_libraries(mpe_errors PRIVATE vshmem)
target_include_directories(mpe_errors PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
vshmem_add_mpe_test(NAME errors_invalid_pe TARGET mpe_errors ARGS invalid_pe NPES 2 3
  WILL_FAIL_REGEX "PE [0-9]: shmem_int_put: PE [0-9]+ is not a valid PE")
vshmem_add_mpe_test(NAME errors_out_of_heap TARGET mpe_errors ARGS out_of_heap NPES 2
  WILL_FAIL_REGEX "shmem_putmem: dest 0x[0-9a-f]+ .* is not a symmetric object: only objects in the symmetric heap .* and the program's global and static variables .* are symmetric, not the stack, malloc'ed memory")
vshmem_add_mpe_test(NAME errors_malloced TARGET mpe_errors ARGS malloced NPES 2
  WILL_FAIL_REGEX "shmem_long_atomic_fetch_add: dest 0x[0-9a-f]+ .* is not a symmetric object: only objects in the symmetric heap")
vshmem_add_mpe_test(NAME errors_before_init TARGET mpe_errors ARGS before_init NPES 1
  WILL_FAIL_REGEX "shmem_long_p: called before shmem_init")
vshmem_add_mpe_test(NAME errors_bad_env TARGET mpe_errors ARGS none NPES 2
  ENV SHMEM_SYMMETRIC_SIZE=12q WILL_FAIL_REGEX "SHMEM_SYMMETRIC_SIZE: '12q' is not a size")
vshmem_add_mpe_test(NAME errors_symmetry TARGET mpe_errors ARGS symmetry NPES 2 3
  ENV VSHMEM_CHECK_SYMMETRY=1 WILL_FAIL_REGEX "shmem_malloc: PEs disagree on the size")
# Without that check, a one-node job still compares the arguments after the call (through the
# shared host pages): NULL on every PE, the heap left alike.
add_executable(mpe_alloc_args alloc_args.c)
target_link_libraries(mpe_alloc_args PRIVATE vshmem)
target_include_directories(mpe_alloc_args PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
foreach(_case size alignment calloc)
  vshmem_add_mpe_test(NAME alloc_args_${_case} TARGET mpe_alloc_args ARGS ${_case} NPES 2 3
    NO_GPU_RERUN LAUNCHERS vshmemrun mpi TIMEOUT 60 ENV VSHMEM_CHECK_SYMMETRY=0
    OUTPUT_REGEX "PE 0: shmem_(malloc|align|calloc): PEs disagree on the (size|alignment) \\(this PE 0: allocation 2, [0-9]+ bytes")
endforeach()
vshmem_add_mpe_test(NAME errors_pe_dies TARGET mpe_errors ARGS pe_dies NPES 2 4
  WILL_FAIL_REGEX "(PE 1|rank 1)[^.]*(signal|killed|SIGKILL|died)")
# Two simulated nodes: remote RMA and atomics go through the remote path (UCX).
if(VSHMEM_HAVE_UCX)
  vshmem_add_mpe_test(NAME remote SOURCES remote.c NPES 2 4 5)
endif()
vshmem_add_mpe_test(NAME errors_global_exit TARGET mpe_errors ARGS global_exit7 NPES 2 4
  WILL_FAIL_REGEX "shmem_global_exit\\(7\\)")
# vshmemrun ends the job with the status given, zero included (other launchers turn a zero
# into a failure, or their other PEs would wait forever).
vshmem_add_mpe_test(NAME global_exit_zero TARGET mpe_errors ARGS global_exit0 NPES 2 3
  LAUNCHERS vshmemrun TIMEOUT 30)
# Team splits with arguments that differ between PEs fail everywhere (no hang).
vshmem_add_mpe_test(NAME team_args SOURCES team_args.c ARGS disagree NPES 2 3 4 TIMEOUT 60)
vshmem_add_mpe_test(NAME team_args_invalid_on_one TARGET mpe_team_args ARGS invalid_on_one
  NPES 3 4 TIMEOUT 60)
# A split of size 0 fails with a message that says the size is the problem.
vshmem_add_mpe_test(NAME team_args_size0 TARGET mpe_team_args ARGS size0 NPES 1 2 3
  LAUNCHERS vshmemrun TIMEOUT 60)
# vshmemrun stops the job when a PE exits (even with 0) between shmem_init and shmem_finalize.
vshmem_add_mpe_test(NAME errors_exit_without_finalize TARGET mpe_errors ARGS exit_without_finalize
  NPES 2 3 LAUNCHERS vshmemrun TIMEOUT 30
  WILL_FAIL_REGEX "PE 1 .* exited with status 0 after shmem_init without calling shmem_finalize")
# The same under mpirun: the job ends with a message naming PE 1 instead of waiting forever,
# from the waiting PEs (which watch their node-local peers, runtime/api/peer_watch.hpp) or from
# mpirun (which sees an MPI process end without MPI_Finalize, now that the MPI plugin leaves it
# out at such an exit), whichever comes first.
vshmem_add_mpe_test(NAME errors_exit_without_finalize_mpirun TARGET mpe_errors
  ARGS exit_without_finalize NPES 2 3 LAUNCHERS mpi pmix TIMEOUT 60
  WILL_FAIL_REGEX "PE 1 \\(pid [0-9]+, on this node\\) exited without shmem_finalize|rank 1 with PID [0-9]+ on[^.]*exiting improperly")
# The device state libvshmem builds (GPU ordinal, PEs sharing it, peer deltas, teams, checks,
# scope), one node and two; with the address checks and system scope asked for; and a device
# library of another state version refused at init.
vshmem_add_mpe_test(NAME device_state SOURCES device_state.cpp NPES 1 2 4
  LIBS vshmem_internal_for_tests)
vshmem_add_mpe_test(NAME device_state_nodes TARGET mpe_device_state NPES 4 LAUNCHERS vshmemrun
  LAUNCHER_ARGS --simulate-nodes 2)
vshmem_add_mpe_test(NAME device_state_env TARGET mpe_device_state NPES 2 LAUNCHERS vshmemrun
  ENV VSHMEM_DEBUG_DEVICE=1 VSHMEM_DEVICE_SCOPE=sys)
vshmem_add_mpe_test(NAME device_state_version TARGET mpe_device_state ARGS version_mismatch
  NPES 1 LAUNCHERS vshmemrun NO_GPU_RERUN
  WILL_FAIL_REGEX "holds device state version [0-9]+ \\([0-9]+ bytes\\), this libvshmem builds version")
# VSHMEM_HEAP_INITIAL: committed at init, so that allocations within it never grow the heap.
vshmem_add_mpe_test(NAME heap_initial TARGET mpe_device_state NPES 1 2 4
  ENV VSHMEM_HEAP_INITIAL=67108864 VSHMEM_HEAP_CHUNK_SIZE=1M SHMEM_SYMMETRIC_SIZE=256M)
# shmem_init does not clear its own objects in a new host heap (zero already: a new memfd): a
# host-only program's heap has at most 64 KiB resident after init (1.6 MiB when it cleared them).
vshmem_add_mpe_test(NAME init_untouched SOURCES init_untouched.c NPES 1 2 4 ARGS 64
  LAUNCHERS vshmemrun NO_GPU_RERUN
  ENV VSHMEM_BACKEND=host)
# Where shmem_init's time goes, at VSHMEM_DEBUG=info (issue 18 item 5): every step of init and the
# first heap growth's parts (export, exchange, import and map of the peers' chunks), one line each
# per PE.
vshmem_add_mpe_test(NAME init_steps TARGET mpe_device_state NPES 1 2 LAUNCHERS vshmemrun
  NO_GPU_RERUN ENV VSHMEM_DEBUG=info
  OUTPUT_REGEX "heap growth by [0-9]+ bytes \\(ms\\): create and map own [0-9.]+, agree [0-9.]+, export and exchange handles [0-9.]+, import and map [01] peers [0-9.]+, agree and register [0-9.]+.*shmem_init steps \\(ms\\): bootstrap [0-9.]+, topology [0-9.]+, provider [0-9.]+, plan [0-9.]+, heap_range [0-9.]+, statics [0-9.]+, transport_multicast [0-9.]+, first_chunk [0-9.]+, sync_area [0-9.]+, teams [0-9.]+, barrier [0-9.]+, device_state [0-9.]+, total [0-9.]+")
# A deadlocked program ends with a message naming every PE's call (VSHMEM_DEADLOCK_S after the
# last PE began to wait), not a hang; a PE that computes, or a thread that may still write, is no
# deadlock. Host heap only (on a GPU heap a kernel could end a wait: only a warning there).
add_executable(mpe_deadlock deadlock.c)
target_link_libraries(mpe_deadlock PRIVATE vshmem pthread)
target_include_directories(mpe_deadlock PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
vshmem_add_mpe_test(NAME deadlock_stuck TARGET mpe_deadlock ARGS stuck NPES 2 3 NO_GPU_RERUN
  LAUNCHERS vshmemrun mpi TIMEOUT 60 ENV VSHMEM_DEADLOCK_S=1 VSHMEM_BACKEND=host
  WILL_FAIL_REGEX "PE 0: shmem_long_wait_until: deadlock: every PE of the job has waited inside a vshmem call for at least 1 s \\(PE 0 in shmem_long_wait_until for [0-9]+ s, PE 1 in shmem_barrier_all for [0-9]+ s")
vshmem_add_mpe_test(NAME deadlock_reduce TARGET mpe_deadlock ARGS reduce NPES 3 NO_GPU_RERUN
  LAUNCHERS vshmemrun TIMEOUT 60 ENV VSHMEM_DEADLOCK_S=1 VSHMEM_BACKEND=host
  WILL_FAIL_REGEX "deadlock: .*\\(PE 0 in shmem_long_sum_reduce for [0-9]+ s, PE 1 in shmem_barrier_all for [0-9]+ s, PE 2 in shmem_barrier_all for")
vshmem_add_mpe_test(NAME deadlock_locks TARGET mpe_deadlock ARGS locks NPES 2 3 NO_GPU_RERUN
  LAUNCHERS vshmemrun TIMEOUT 60 ENV VSHMEM_DEADLOCK_S=1 VSHMEM_BACKEND=host
  WILL_FAIL_REGEX "deadlock: .*\\(PE 0 in shmem_set_lock for [0-9]+ s, PE 1 in shmem_set_lock for")
vshmem_add_mpe_test(NAME deadlock_computes TARGET mpe_deadlock ARGS computes NPES 2 3
  NO_GPU_RERUN LAUNCHERS vshmemrun TIMEOUT 60 ENV VSHMEM_DEADLOCK_S=1 VSHMEM_BACKEND=host)
vshmem_add_mpe_test(NAME deadlock_stopped TARGET mpe_deadlock ARGS stopped NPES 2 3
  NO_GPU_RERUN LAUNCHERS vshmemrun TIMEOUT 60 ENV VSHMEM_DEADLOCK_S=1 VSHMEM_BACKEND=host)
vshmem_add_mpe_test(NAME deadlock_thread TARGET mpe_deadlock ARGS thread NPES 2 NO_GPU_RERUN
  LAUNCHERS vshmemrun TIMEOUT 60 ENV VSHMEM_DEADLOCK_S=1 VSHMEM_BACKEND=host
  OUTPUT_REGEX "PE 0: shmem_long_wait_until: every PE of the job has waited inside a vshmem call for at least 1 s \\(PE 0 in shmem_long_wait_until for [0-9]+ s, PE 1 in shmem_barrier_all for [0-9]+ s\\): a deadlock, unless another thread")
