#!/usr/bin/env bash
# The runtime under a sanitizer, host code only (nvcc takes no sanitizer flags, and no GPU is
# needed):
#   tests/tools/sanitize.sh address         # AddressSanitizer + UndefinedBehaviorSanitizer
#   tests/tools/sanitize.sh thread          # ThreadSanitizer
#   tests/tools/sanitize.sh address --all   # every unit and vshmemrun test, not the CI subset
#   tests/tools/sanitize.sh thread --build  # only build the subset (tests/run_all.sh builds
#   tests/tools/sanitize.sh thread --test   # beside other work, then runs the tests)
# Builds in build-<sanitizer>/ ($SANITIZE_DIR if set; -O1 -g1: what the sanitizers' documentation
# advises, and the quickest build that still gives file:line in every report) and runs, by
# default, the subset below: one test per runtime layer, chosen so that CI (tests/run_all.sh) can
# afford both sanitizers. The mpirun launchers and the Python package are left out: they start
# processes the sanitizer runtime was not loaded into.
set -euo pipefail
cd "$(dirname "$0")/../.."
kind=${1:?usage: sanitize.sh address|thread [--all|--build|--test]}
mode=${2:-}
dir=${SANITIZE_DIR:-build-$kind}

# The subset, layer by layer (each line: tests, then the layers they exercise):
tests=(
  # memory, ipc, heap: the host provider, the handle exchange and its sockets, the allocator
  'unit\.(host_memory_test|handle_exchange_test|fd_passing_test|allocator_test)'
  'unit\.(chunk_pipeline_test|staging_buffer_test|proxy_ring_test)'
  # bootstrap: socket hub (processes, and threads with injected delays and deaths), gather
  # rounds, time-outs; config table; wait policy; fault reports
  'unit\.(bootstrap_test|socket_hub_test|gather_round_test|env_test|wait_policy_test)'
  'unit\.fault_report_test'
  # VA agreement, heap growth, transport plan with threads as PEs: refusals, delays, deaths
  'unit\.(va_agreement_test|heap_growth_test|transport_plan_test)'
  # transport (shared team, locality), the device proxy's ring (host side), the launcher
  'unit\.(transport_test|device_proxy_test|launcher_test)'
  # init, heap layout and growth (all-or-nothing step), rma, teardown cycles
  'mpe\.(heap|heap_growth_agree|rma)\.vshmemrun\.4' 'mpe\.teardown\.vshmemrun\.2'
  # api: atomics, signals and waits, locks, teams, collectives, reductions (every case)
  'mpe\.api_(amo|team_coll|reduce)\.[a-z0-9_]+\.vshmemrun\.4'
  'mpe\.(api_signal_wait|api_lock|coll_small|bootstrap_collectives)\.vshmemrun\.4'
  # remote path over UCX (shared memory and TCP), a peer that dies, the device proxy thread (on a
  # test's ring, and on the ring libvshmem makes through the fake driver: freed after it stopped)
  'mpe\.(remote|ucx_sm_2nodes_api_amo|ucx_tcp_2nodes_rma)\.vshmemrun\.4'
  'mpe\.(ucx_sm_peer_dies|device_proxy_host)\.vshmemrun\.2'
  # the UCX worker's own lock (the worker is serialized): its unit test
  'unit\.worker_lock_test'
  # the device proxy's ring that libvshmem makes through the fake driver, requests through it to
  # the other node (its PEs' heap is the fake driver's "GPU memory": remote puts land through the
  # target's progress thread, a provider copy)
  'mpe\.device_state_fake_ring\.vshmemrun\.2'
  # the launcher judging a PE that dies
  'mpe\.errors_pe_dies\.vshmemrun\.4'
)
# ThreadSanitizer only: application threads of every PE on the network at once beside the
# progress threads, under a preloaded shim (AddressSanitizer refuses to start when a library is
# preloaded ahead of its runtime).
if [[ $kind == thread ]]; then tests+=('mpe\.ucx_tcp_threads\.vshmemrun\.4'); fi
targets=(vshmem vshmemrun vshmem_transport_ucx launcher_helper
  host_memory_test handle_exchange_test fd_passing_test allocator_test chunk_pipeline_test
  staging_buffer_test proxy_ring_test bootstrap_test socket_hub_test gather_round_test env_test
  wait_policy_test fault_report_test va_agreement_test heap_growth_test transport_plan_test
  transport_test device_proxy_test launcher_test worker_lock_test vshmem_test_ucp_serial_shim
  mpe_heap mpe_heap_growth_agree mpe_rma mpe_teardown mpe_api_amo mpe_api_team_coll
  mpe_api_reduce mpe_api_signal_wait mpe_api_lock mpe_coll_small mpe_bootstrap_collectives
  mpe_remote mpe_device_proxy_host mpe_device_state_fake mpe_errors)

# Ninja where it is installed (it keeps both CPUs busier than make), unless the tree exists.
# The compiler: $SANITIZE_CC / $SANITIZE_CXX, else clang 22 where it is installed
# (install_deps.sh installs it beside clang-tidy 22), else the default (GCC). Clang builds the two
# trees in 31% less CPU than GCC 12 (555 against 806 s here; bench/RESULTS.md, session 33), and
# its sanitizers are LLVM's own (GCC's are ports of them). Chosen when the tree is made: an
# existing tree keeps its compiler.
generator=()
compilers=()
if [[ ! -e $dir/CMakeCache.txt ]]; then
  command -v ninja >/dev/null && generator=(-G Ninja)
  cc=${SANITIZE_CC:-} cxx=${SANITIZE_CXX:-}
  # Clang only with its sanitizer runtime (libclang-rt-22-dev), in either layout of its folder.
  runtime=asan
  [[ $kind == thread ]] && runtime=tsan
  if [[ -z $cc$cxx ]] && command -v clang++-22 >/dev/null &&
    compgen -G "$(clang++-22 -print-runtime-dir)/libclang_rt.$runtime*.so" >/dev/null; then
    cc=$(command -v clang-22) cxx=$(command -v clang++-22)
  fi
  [[ -n $cc && -n $cxx ]] && compilers=(-DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx")
fi
cmake -S . -B "$dir" "${generator[@]}" "${compilers[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DVSHMEM_WITH_CUDA=OFF -DVSHMEM_SANITIZE="$kind" \
  -DVSHMEM_WITH_PYTHON=OFF -DVSHMEM_BUILD_BENCH=OFF -DVSHMEM_BUILD_EXAMPLES=OFF \
  -DVSHMEM_SELECTED_TARGETS="$(IFS=';'; echo "${targets[*]}")" >/dev/null
# A report fails the test (the sanitizers' exit code), and every report is kept in full.
# SIGSEGV and SIGBUS stay with the program: the runtime's fault report (which names the PE and
# the address) and the launcher's "killed by signal" are what the tests check; a wild access
# still fails its test, by that signal.
# A Clang tree's runtimes name file:line through llvm-symbolizer (GCC's have their own).
signals=handle_segv=0:handle_sigbus=0
symbolizer=$(command -v llvm-symbolizer-22 || true)
symbolize=${symbolizer:+:external_symbolizer_path=$symbolizer}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=0:exitcode=86:$signals$symbolize}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=86$symbolize}
# Two suppressions, one kind of report: a remote peer's write into this PE's memory, made by
# this PE's progress thread on the peer's behalf, against this PE's own access of the same bytes
# before or after it, where the two are ordered only through other processes (the put's reply to
# the peer, a barrier whose rounds pass through node-local peers' shared memory), which
# ThreadSanitizer cannot see:
# - a copy the remote path's target side made for a peer (the memory provider's copy into a GPU
#   heap; only the fake driver's "GPU memory", host memory, lets the CPU read it directly:
#   mpe.device_state_fake_ring reads a put's data so after the barrier);
# - UCX's software RMA handler applying a peer's put over TCP (mpe.ucx_tcp_2nodes_rma.4: the
#   main thread's own put to the same word before the barrier; 1 of 4 runs).
mkdir -p "$dir"
printf '%s\n' 'race:vshmem::RemotePath::Host::copy_start' 'race:ucp_put_handler' >"$dir/tsan.supp"
tsan_default=halt_on_error=1:exitcode=86:second_deadlock_stack=1:$signals$symbolize
export TSAN_OPTIONS=${TSAN_OPTIONS:-$tsan_default:suppressions=$PWD/$dir/tsan.supp}
# UCX's memory hooks (libucm) run in a thread's exit (nptl's madvise of its stack) after
# ThreadSanitizer has torn the thread's state down, and crash there: no hooks under TSan.
if [[ $kind == thread ]]; then export UCX_MEM_EVENTS=${UCX_MEM_EVENTS:-no}; fi
if [[ $mode == --all ]]; then
  cmake --build "$dir" -j"$(nproc)"
  exec ctest --test-dir "$dir" --output-on-failure -j2 --timeout 300 -L "unit|vshmemrun" -LE gpu \
    -E "python|install|build\\.|register_budget|multimem_ptx"
fi
if [[ $mode != --test ]]; then cmake --build "$dir" -j"$(nproc)" --target vshmem_selected; fi
[[ $mode == --build ]] && exit 0
# CTest's regular expressions allow few groups: the subset becomes the list of its test names.
pattern=$(IFS='|'; echo "^(${tests[*]})\$")
names=$(ctest --test-dir "$dir" -N -LE gpu | sed -n 's/^ *Test *#[0-9]*: //p' | grep -E "$pattern")
# A renamed test must not drop out of the subset unnoticed.
for t in "${tests[@]}"; do
  grep -qE "^($t)\$" <<<"$names" || { echo "sanitize.sh: no test matches $t" >&2; exit 1; }
done
regex=$(echo "$names" | sed 's/\./\\./g; s/.*/^&$/' | paste -sd'|')
echo "sanitize.sh $kind: $(echo "$names" | wc -l) tests"
ctest --test-dir "$dir" --output-on-failure -j2 --timeout 300 -R "$regex"
