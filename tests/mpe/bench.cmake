# Smoke runs of the benchmarks (bench/, issue #6): they must run to the end on the host backend
# with 2 PEs; no figure is asserted (CI machines are shared and their timings mean nothing).
if(VSHMEM_BUILD_BENCH)
  vshmem_add_mpe_test(NAME bench_host_quick TARGET vshmem_bench_host ARGS --quick
    NPES 2 LAUNCHERS vshmemrun ENV VSHMEM_BACKEND=host LABELS bench TIMEOUT 60)
  # The driver and its table, on what is already built (--host-only: never a GPU in CI).
  find_program(VSHMEM_BENCH_PYTHON NAMES python3)
  if(VSHMEM_BENCH_PYTHON)
    add_test(NAME bench.run_sh.quick
      COMMAND ${PROJECT_SOURCE_DIR}/bench/run.sh --quick --host-only
              --build-dir ${PROJECT_BINARY_DIR} --out ${CMAKE_CURRENT_BINARY_DIR}/bench-quick.jsonl)
    set_tests_properties(bench.run_sh.quick PROPERTIES LABELS bench TIMEOUT 60
      ENVIRONMENT "VSHMEM_BOOTSTRAP_TIMEOUT=60"
      PASS_REGULAR_EXPRESSION "host +host +put_bw +nbi .*GB/s")
  endif()
endif()
