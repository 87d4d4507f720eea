# The OpenSHMEM API groups of runtime/api beyond RMA (issue #3): atomics, signals and waits,
# locks, teams and contexts, collectives, reductions, C11 generic forms, and bad input.
# Every PE count runs under vshmemrun; mpirun (mpi and pmix bootstraps) runs 2 and 3 PEs.
# amo, team_coll and reduce hold one behaviour per case (tests/mpe/api_check.h): under vshmemrun
# each case is its own CTest entry, mpe.api_amo.<case>.vshmemrun.<n>; mpirun, the GPU machines'
# reruns (gpu.api_amo.<n>) and the remote path (remote_ucx.cmake) run the whole program.
set(_api_amo_cases contended_totals_exact every_type_and_operation context_on_reversed_team)
set(_api_team_coll_cases predefined_teams strided_split_with_context collectives_on_2d_split
    team_slots_recycled team_slots_exhausted context_bad_input active_set_collectives)
set(_api_reduce_cases team_reduce_world team_reduce_2d_columns to_all_world to_all_even_odd_sets)
function(_api_program name npes)
  vshmem_add_mpe_test(NAME api_${name} SOURCES api_${name}.c NPES ${npes} LAUNCHERS vshmemrun
                      GPU_RERUN_ONLY ${ARGN})
  foreach(_case IN LISTS _api_${name}_cases)
    vshmem_add_mpe_test(NAME api_${name}.${_case} TARGET mpe_api_${name} ARGS ${_case}
                        NPES ${npes} LAUNCHERS vshmemrun NO_GPU_RERUN)
  endforeach()
  vshmem_add_mpe_test(NAME api_${name}_mpirun TARGET mpe_api_${name} NPES 2 3 LAUNCHERS mpi pmix
                      NO_GPU_RERUN)
  # A misspelt case fails before shmem_init, and the program's list of cases is the one above
  # (a case missing here would run only in the whole-program runs).
  list(JOIN _api_${name}_cases " " _all)
  vshmem_add_mpe_test(NAME api_${name}.unknown_case_named TARGET mpe_api_${name} ARGS no_such_case
                      NPES 1 LAUNCHERS vshmemrun NO_GPU_RERUN
                      WILL_FAIL_REGEX "unknown case 'no_such_case'; the cases are: ${_all}")
endfunction()
_api_program(amo "1;2;3;4;8")
_api_program(team_coll "1;2;3;4;5;8")
_api_program(reduce "1;2;3;4;7;8" LIBS m)
foreach(_t signal_wait lock)
  vshmem_add_mpe_test(NAME api_${_t} SOURCES api_${_t}.c NPES 1 2 3 4 8 LAUNCHERS vshmemrun)
  vshmem_add_mpe_test(NAME api_${_t}_mpirun TARGET mpe_api_${_t} NPES 2 3 LAUNCHERS mpi pmix
                      NO_GPU_RERUN)
endforeach()
vshmem_add_mpe_test(NAME api_generic SOURCES api_generic.c NPES 1 3 4 LAUNCHERS vshmemrun LIBS m)
set_target_properties(mpe_api_generic PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON)

# Bad input: the job ends with a message naming the PE, the call and the cause.
add_executable(mpe_api_errors api_errors.c)
target_link_libraries(mpe_api_errors PRIVATE vshmem pthread)
target_include_directories(mpe_api_errors PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
function(_api_error name regex)
  vshmem_add_mpe_test(NAME api_errors_${name} TARGET mpe_api_errors ARGS ${name} NPES 2 3
                      LAUNCHERS vshmemrun NO_GPU_RERUN WILL_FAIL_REGEX "${regex}")
endfunction()
_api_error(invalid_team "PE [0-9]: shmem_team_sync: the team is SHMEM_TEAM_INVALID")
_api_error(destroyed_team "PE [0-9]: shmem_long_broadcast: 0x[0-9a-f]+ is not a valid team")
_api_error(ctx_pe_outside_team
           "PE [0-9]: shmem_ctx_long_p: PE [23] is not a PE of the context's team")
_api_error(root_outside_team "PE [0-9]: shmem_long_broadcast: PE_root [23] is not a PE of the team")
_api_error(overlap "PE [0-9]: shmem_long_fcollect: source .* and dest .* overlap")
_api_error(sig_op "PE [0-9]: shmem_long_put_signal: unknown sig_op 7")
_api_error(cmp "PE [0-9]: shmem_long_wait_until: unknown comparison 42")
_api_error(ivar_not_symmetric
           "PE [0-9]: shmem_long_wait_until: ivars 0x[0-9a-f]+ .* is not a symmetric object")
_api_error(destroy_world "PE [0-9]: shmem_team_destroy: SHMEM_TEAM_WORLD is predefined")
_api_error(clear_unheld_lock "PE [0-9]: shmem_clear_lock: this PE does not hold lock")
_api_error(active_set_outside "PE [0-9]: shmem_barrier: the active set .* outside the job")
_api_error(private_ctx_other_thread
           "PE [0-9]: shmem_ctx_long_p: context 0x[0-9a-f]+ was created SHMEM_CTX_PRIVATE by another")
_api_error(garbage_ctx "PE [0-9]: shmem_ctx_long_p: 0x[0-9a-f]+ is not a valid context")
