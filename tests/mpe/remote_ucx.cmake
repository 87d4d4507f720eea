# The remote path (runtime/transport/plugin_ucx.cpp): multi-PE programs of the other fragments
# re-run as simulated nodes (vshmemrun --simulate-nodes K), so that every PE has peers reached
# through UCX instead of the mapping: over shared memory (UCX_TLS=sm,self) and over TCP loopback
# (UCX_TLS=tcp), on 2 and 3 nodes. Teams mix mapped and remote PEs whenever a node has two.
if(NOT VSHMEM_HAVE_UCX)
  return()
endif()
# The environment of a test over UCX's shared memory, over TCP loopback, or with UCX's own choice.
set(_ucx_env_sm "UCX_TLS=sm,self")
set(_ucx_env_tcp "UCX_TLS=tcp" "UCX_NET_DEVICES=lo")
set(_ucx_env_default "")
set(_ucx_suite rma api_amo heap api_signal_wait api_team_coll api_reduce api_lock teardown)
foreach(_tls sm tcp)
  set(_ucx_env ${_ucx_env_${_tls}})
  foreach(_t IN LISTS _ucx_suite)
    # UCX's tcp transport allocates about 1 MiB once per process at a varying moment, which the
    # teardown test's address-space check (cycle 2 against cycle 1) takes for a leak.
    if(_tls STREQUAL "tcp" AND _t STREQUAL "teardown")
      continue()
    endif()
    set(_env ${_ucx_env})
    if(_t STREQUAL "rma" OR _t STREQUAL "heap")
      list(APPEND _env VSHMEM_HEAP_CHUNK_SIZE=1M SHMEM_SYMMETRIC_SIZE=64M)
    endif()
    # The GPU machines re-run the 2-node sm runs on the GPU heap: staged through host buffers.
    set(_gpu NO_GPU_RERUN)
    if(_tls STREQUAL "sm" AND (_t STREQUAL "rma" OR _t STREQUAL "api_amo"))
      set(_gpu "")
    endif()
    vshmem_add_mpe_test(NAME ucx_${_tls}_2nodes_${_t} TARGET mpe_${_t} LAUNCHERS vshmemrun
      LAUNCHER_ARGS --simulate-nodes 2 NPES 2 4 TIMEOUT 60 ENV ${_env} ${_gpu})
    vshmem_add_mpe_test(NAME ucx_${_tls}_3nodes_${_t} TARGET mpe_${_t} LAUNCHERS vshmemrun
      LAUNCHER_ARGS --simulate-nodes 3 NPES 3 5 TIMEOUT 60 ENV ${_env} NO_GPU_RERUN)
  endforeach()
endforeach()
# The remote test (blocking and _nbi forms, shmem_ptr, atomics) over shared memory too (the core
# fragment runs it with UCX's default choice, TCP where peer failure handling is wanted).
vshmem_add_mpe_test(NAME ucx_sm_remote TARGET mpe_remote NPES 2 4 LAUNCHERS vshmemrun TIMEOUT 60
  NO_GPU_RERUN ENV UCX_TLS=sm,self)

# UCX_PROTO_ENABLE=y (protocols v2): UCX 1.13's crash the process in libucp once operations start
# (stack smashing), so there the plugin runs UCX without them and warns; UCX 1.16 runs them by
# default. Either way the RMA test over TCP between two nodes passes.
set(_proto_v2_check "")
if(VSHMEM_UCX_VERSION MATCHES "^1\\.13\\.")
  set(_proto_v2_check OUTPUT_REGEX "PE 0: warning: ucx: UCX_PROTO_ENABLE=y ignored: UCX 1\\.13")
endif()
vshmem_add_mpe_test(NAME ucx_tcp_proto_v2_rma TARGET mpe_rma LAUNCHERS vshmemrun
  LAUNCHER_ARGS --simulate-nodes 2 NPES 2 TIMEOUT 60 NO_GPU_RERUN
  ENV UCX_TLS=tcp UCX_NET_DEVICES=lo UCX_PROTO_ENABLE=y VSHMEM_HEAP_CHUNK_SIZE=1M
      SHMEM_SYMMETRIC_SIZE=64M ${_proto_v2_check})

# Every transfer and atomic performed by the target's progress thread (what a GPU heap gets when
# UCX cannot register GPU memory): the staged, pipelined path runs on the host heap here.
foreach(_t rma api_amo api_signal_wait)
  vshmem_add_mpe_test(NAME ucx_target_ops_${_t} TARGET mpe_${_t} LAUNCHERS vshmemrun
    LAUNCHER_ARGS --simulate-nodes 2 NPES 2 4 TIMEOUT 60 NO_GPU_RERUN
    ENV UCX_TLS=tcp UCX_NET_DEVICES=lo VSHMEM_UCX_RMA=target VSHMEM_UCX_ATOMICS=target
        VSHMEM_HEAP_CHUNK_SIZE=1M SHMEM_SYMMETRIC_SIZE=64M)
endforeach()
vshmem_add_mpe_test(NAME ucx_target_ops_remote TARGET mpe_remote NPES 2 4 LAUNCHERS vshmemrun
  TIMEOUT 60 NO_GPU_RERUN ENV UCX_TLS=sm,self VSHMEM_UCX_RMA=target VSHMEM_UCX_ATOMICS=target)

# Staged transfers between simulated nodes of one host (the path a GPU heap takes; the host heap
# with VSHMEM_UCX_RMA=target): odd sizes and offsets, checked byte by byte. Over shared memory the
# target's copies must use the initiator's staging buffers directly (ucp_rkey_ptr), as PE 0's
# closing info line says; with VSHMEM_UCX_STAGE_DIRECT=0, and over TCP (where UCX has no
# shared-memory mapping to offer, the capability check), the chunks travel in the messages.
vshmem_add_mpe_test(NAME ucx_sm_staged_direct TARGET mpe_remote ARGS staged NPES 2 4
  LAUNCHERS vshmemrun TIMEOUT 90
  ENV UCX_TLS=sm,self VSHMEM_UCX_RMA=target VSHMEM_DEBUG=info SHMEM_SYMMETRIC_SIZE=64M
  OUTPUT_REGEX "PE 0: info: ucx: staged transfers to PE [0-9]+: direct.*PE 0: info: ucx: staged chunks of ours: [1-9][0-9]* direct")
vshmem_add_mpe_test(NAME ucx_sm_staged_carried TARGET mpe_remote ARGS staged NPES 2
  LAUNCHERS vshmemrun TIMEOUT 90 NO_GPU_RERUN
  ENV UCX_TLS=sm,self VSHMEM_UCX_RMA=target VSHMEM_UCX_STAGE_DIRECT=0 VSHMEM_DEBUG=info
      SHMEM_SYMMETRIC_SIZE=64M
  OUTPUT_REGEX "PE 0: info: ucx: staged chunks of ours: 0 direct[^,]*, [1-9][0-9]* carried")
vshmem_add_mpe_test(NAME ucx_tcp_staged TARGET mpe_remote ARGS staged NPES 2
  LAUNCHERS vshmemrun TIMEOUT 90 NO_GPU_RERUN
  ENV UCX_TLS=tcp UCX_NET_DEVICES=lo VSHMEM_UCX_RMA=target VSHMEM_DEBUG=info
      SHMEM_SYMMETRIC_SIZE=64M
  OUTPUT_REGEX "PE 0: info: ucx: staged transfers to PE 1: data carried in UCX messages \\(PE 1 cannot map them")
# A peer killed (kill -9) during a stream of direct staged puts: named, no hang.
vshmem_add_mpe_test(NAME ucx_sm_staged_peer_killed TARGET mpe_remote ARGS peer_killed NPES 2
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN
  ENV UCX_TLS=sm,self VSHMEM_UCX_RMA=target VSHMEM_BOOTSTRAP_TIMEOUT=5
  WILL_FAIL_REGEX "shmem_(putmem|long_p|quiet): put to PE [0-9]+: (PE [0-9]+ failed or exited|no (progress|answer) for 5 s)|job watch: PE [0-9]+ \\((pid [0-9]+, on this node|on another node)\\) (exited|failed)|PE [0-9]+ \\(pid [0-9]+\\) was killed by signal 9")

# A long wait on data that only remote peers write sleeps in the network's wait instead of
# polling (the waiter's CPU), and still returns soon after the put, over shared memory and TCP.
foreach(_tls sm tcp)
  set(_ucx_env ${_ucx_env_${_tls}})
  vshmem_add_mpe_test(NAME ucx_${_tls}_wait_wake TARGET mpe_remote ARGS wait_wake NPES 2
    LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV ${_ucx_env})
endforeach()

# A PE that only posts puts (its progress thread stays off the network meanwhile) still performs
# what a remote peer asks of it: an atomic on its global variable.
foreach(_tls sm tcp)
  set(_ucx_env ${_ucx_env_${_tls}})
  vshmem_add_mpe_test(NAME ucx_${_tls}_issue_loop TARGET mpe_remote ARGS issue_loop NPES 2 4
    LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV ${_ucx_env}
    OUTPUT_REGEX "remote issue_loop: the flag came after")
endforeach()

# While the application polls the network (8-byte gets back to back), its progress thread sleeps
# instead of waking every few milliseconds to look; once it stops (computes), the thread takes
# over and answers a peer's get.
foreach(_tls sm tcp)
  set(_ucx_env ${_ucx_env_${_tls}})
  vshmem_add_mpe_test(NAME ucx_${_tls}_handoff TARGET mpe_remote ARGS handoff NPES 2
    LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV ${_ucx_env}
    OUTPUT_REGEX "remote handoff: a get from PE 0 while it computes took")
  # Both pin their PEs to the same two CPUs: not beside each other.
  set_tests_properties(mpe.ucx_${_tls}_handoff.vshmemrun.2 PROPERTIES RESOURCE_LOCK first_two_cpus)
endforeach()

# A blocking put asks UCX for fast local completion (a bit of op_attr_mask), an _nbi put does not:
# a shim over ucp_put_nbx counts them (ucp_put_shim.cpp). Over one TCP connection puts are the
# plugin's own messages instead where asked (no ucp_put_nbx call; the default on UCX 1.13).
add_library(vshmem_test_ucp_put_shim SHARED ucp_put_shim.cpp)
target_link_libraries(vshmem_test_ucp_put_shim PRIVATE vshmem_ucx ${CMAKE_DL_LIBS})
vshmem_add_mpe_test(NAME ucx_tcp_put_params TARGET mpe_remote ARGS put_params messages NPES 2
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN
  ENV ${_ucx_env_tcp} VSHMEM_UCX_PUT_MESSAGES=1 LD_PRELOAD=$<TARGET_FILE:vshmem_test_ucp_put_shim>
  OUTPUT_REGEX "remote put_params: puts over TCP travel as messages")
vshmem_add_mpe_test(NAME ucx_tcp_put_params_network TARGET mpe_remote ARGS put_params NPES 2
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN
  ENV ${_ucx_env_tcp} VSHMEM_UCX_PUT_MESSAGES=0 LD_PRELOAD=$<TARGET_FILE:vshmem_test_ucp_put_shim>
  OUTPUT_REGEX "remote put_params: blocking puts ask for fast completion, _nbi puts do not")
# Gets of at least 8 KiB over one TCP connection, blocking and _nbi, are the plugin's get
# messages (no ucp_get_nbx call; the default); smaller gets are UCX's.
vshmem_add_mpe_test(NAME ucx_tcp_get_params TARGET mpe_remote ARGS get_params messages NPES 2 3
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN
  ENV ${_ucx_env_tcp} VSHMEM_UCX_GET_MESSAGES=1 LD_PRELOAD=$<TARGET_FILE:vshmem_test_ucp_put_shim>
  OUTPUT_REGEX "remote get_params: gets of 8 KiB or more over TCP travel as messages")
# A get message whose request UCX fails to send (the shim loses it and reports a reset
# connection) fails at once with UCX's status, not after the time limit with "no answer".
vshmem_add_mpe_test(NAME ucx_tcp_get_lost TARGET mpe_remote ARGS get_lost NPES 2
  LAUNCHERS vshmemrun TIMEOUT 20 NO_GPU_RERUN
  ENV ${_ucx_env_tcp} VSHMEM_UCX_GET_MESSAGES=1 VSHMEM_BOOTSTRAP_TIMEOUT=30 VSHMEM_TEST_LOSE_REQUESTS=1
      LD_PRELOAD=$<TARGET_FILE:vshmem_test_ucp_put_shim>
  WILL_FAIL_REGEX "shmem_getmem: get from PE 1: PE 1 failed or exited \\(UCX: Connection reset")
vshmem_add_mpe_test(NAME ucx_tcp_get_params_network TARGET mpe_remote ARGS get_params NPES 2
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN
  ENV ${_ucx_env_tcp} VSHMEM_UCX_GET_MESSAGES=0 LD_PRELOAD=$<TARGET_FILE:vshmem_test_ucp_put_shim>
  OUTPUT_REGEX "remote get_params: every get is UCX's")
# Application threads of every PE on the network at once, beside the progress threads: no two
# threads may ever be inside the UCX worker together (the plugin's worker is serialized by its
# own lock, worker_lock.hpp; the shim aborts the PE that enters it from a second thread). Also
# with every transfer and atomic performed by the target (its progress thread's replies).
add_library(vshmem_test_ucp_serial_shim SHARED ucp_serial_shim.cpp)
target_link_libraries(vshmem_test_ucp_serial_shim PRIVATE vshmem_ucx ${CMAKE_DL_LIBS})
foreach(_tls sm tcp)
  vshmem_add_mpe_test(NAME ucx_${_tls}_threads TARGET mpe_remote ARGS threads NPES 2 4
    LAUNCHERS vshmemrun TIMEOUT 120 NO_GPU_RERUN
    ENV ${_ucx_env_${_tls}} LD_PRELOAD=$<TARGET_FILE:vshmem_test_ucp_serial_shim>
    OUTPUT_REGEX "remote threads: 4 threads x 300 rounds")
endforeach()
vshmem_add_mpe_test(NAME ucx_target_ops_threads TARGET mpe_remote ARGS threads NPES 2
  LAUNCHERS vshmemrun TIMEOUT 120 NO_GPU_RERUN
  ENV ${_ucx_env_tcp} VSHMEM_UCX_RMA=target VSHMEM_UCX_ATOMICS=target
      LD_PRELOAD=$<TARGET_FILE:vshmem_test_ucp_serial_shim>
  OUTPUT_REGEX "remote threads: 4 threads x 300 rounds")

# A small put over TCP is a message its target does not answer: quiet must still wait for the
# target to perform it (here: a target stopped for 0.3 s).
vshmem_add_mpe_test(NAME ucx_tcp_quiet_confirms TARGET mpe_remote ARGS quiet_confirms NPES 2
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV ${_ucx_env_tcp} VSHMEM_UCX_PUT_MESSAGES=1
  OUTPUT_REGEX "remote quiet_confirms: quiet waited")

# A peer that dies or hangs mid-job: the next remote call fails with a message naming it,
# within the time limit, instead of hanging.
foreach(_tls sm tcp)
  set(_ucx_env ${_ucx_env_${_tls}})
  # The put fails naming the dead PE, or the job watch (runtime/api/job_watch.hpp) of a PE on
  # its node, or one whose connection to it broke, names it first.
  vshmem_add_mpe_test(NAME ucx_${_tls}_peer_dies TARGET mpe_remote ARGS peer_dies NPES 2 4
    LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV ${_ucx_env} VSHMEM_BOOTSTRAP_TIMEOUT=5
    WILL_FAIL_REGEX "shmem_(putmem|long_p): put to PE [0-9]+: (PE [0-9]+ failed or exited|no progress for 5 s)|job watch: PE [0-9]+ \\((pid [0-9]+, on this node|on another node)\\) (exited|failed)")
  vshmem_add_mpe_test(NAME ucx_${_tls}_peer_hangs TARGET mpe_remote ARGS peer_hangs NPES 2
    LAUNCHERS vshmemrun LAUNCHER_ARGS --grace 0 TIMEOUT 60 NO_GPU_RERUN
    ENV ${_ucx_env} VSHMEM_BOOTSTRAP_TIMEOUT=2
    WILL_FAIL_REGEX "shmem_long_atomic_fetch_inc: atomic on PE 1: no (progress|answer) for 2 s")
  # A blocking get of 1 MiB: over TCP get messages (their own wait: "no answer"), over shared
  # memory UCX's get (the wait for its request: "no progress").
  set(_waited answer)
  if(_tls STREQUAL "sm")
    set(_waited progress)
  endif()
  vshmem_add_mpe_test(NAME ucx_${_tls}_peer_hangs_get TARGET mpe_remote ARGS peer_hangs_get NPES 2
    LAUNCHERS vshmemrun LAUNCHER_ARGS --grace 0 TIMEOUT 60 NO_GPU_RERUN
    ENV ${_ucx_env} VSHMEM_BOOTSTRAP_TIMEOUT=2 VSHMEM_UCX_GET_MESSAGES=1
    WILL_FAIL_REGEX "shmem_getmem: get from PE 1: no ${_waited} for 2 s")
  # kill -9 of a remote PE while a stream of large puts to it is under way: the put fails
  # naming it (TCP: UCX sees the connection break), or the launcher or a job watch names it
  # first (shared memory in UCX 1.13 has no peer failure handling).
  vshmem_add_mpe_test(NAME ucx_${_tls}_peer_killed TARGET mpe_remote ARGS peer_killed NPES 2 4
    LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV ${_ucx_env} VSHMEM_BOOTSTRAP_TIMEOUT=5
    WILL_FAIL_REGEX "shmem_(putmem|long_p|quiet): put to PE [0-9]+: (PE [0-9]+ failed or exited|no progress for 5 s)|completing the transfers: .*failed: PE [0-9]+|job watch: PE [0-9]+ \\((pid [0-9]+, on this node|on another node)\\) (exited|failed)|PE [0-9]+ \\(pid [0-9]+\\) was killed by signal 9")
endforeach()

# Endpoints without peer failure handling over TCP (VSHMEM_UCX_PEER_ERRORS=0, as OSHMEM makes
# them; UCX 1.16 then puts with zero copy): the transfers and atomics, the info line that says so,
# and a PE killed during large puts, named within the time limit (UCX fails the transfers on the
# broken connection without an error callback, or the time limit or the launcher names it).
vshmem_add_mpe_test(NAME ucx_tcp_no_peer_errors_rma TARGET mpe_rma LAUNCHERS vshmemrun
  LAUNCHER_ARGS --simulate-nodes 2 NPES 4 TIMEOUT 60 NO_GPU_RERUN
  ENV UCX_TLS=tcp UCX_NET_DEVICES=lo VSHMEM_UCX_PEER_ERRORS=0 VSHMEM_HEAP_CHUNK_SIZE=1M
      SHMEM_SYMMETRIC_SIZE=64M VSHMEM_DEBUG=info
  OUTPUT_REGEX "PE 0: info: ucx: worker ready \\([^)]*peer failure handling no \\(VSHMEM_UCX_PEER_ERRORS=0\\)")
vshmem_add_mpe_test(NAME ucx_tcp_no_peer_errors_remote TARGET mpe_remote NPES 2 4
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN
  ENV UCX_TLS=tcp UCX_NET_DEVICES=lo VSHMEM_UCX_PEER_ERRORS=0)
vshmem_add_mpe_test(NAME ucx_tcp_no_peer_errors_peer_killed TARGET mpe_remote ARGS peer_killed
  NPES 2 4 LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN
  ENV UCX_TLS=tcp UCX_NET_DEVICES=lo VSHMEM_UCX_PEER_ERRORS=0 VSHMEM_BOOTSTRAP_TIMEOUT=5
  WILL_FAIL_REGEX "shmem_(putmem|long_p|quiet): put to PE [0-9]+: (PE [0-9]+ failed or exited|no progress for 5 s)|completing the transfers: .*failed: PE [0-9]+|job watch: PE [0-9]+ \\((pid [0-9]+, on this node|on another node)\\) (exited|failed)|PE [0-9]+ \\(pid [0-9]+\\) was killed by signal 9")

# One PE with VSHMEM_UCX_PEER_ERRORS=0 makes it so for the whole job: PE 0, which did not ask,
# says so in its "worker ready" line, written once the PEs have agreed.
if("vshmemrun" IN_LIST VSHMEM_TEST_LAUNCHERS)
  vshmem_launch_command(_cmd vshmemrun 2)
  add_test(NAME mpe.ucx_tcp_no_peer_errors_one_pe.vshmemrun.2 COMMAND ${CMAKE_COMMAND}
    "-DREGEX=PE 0: info: ucx: worker ready \\([^)]*peer failure handling no \\(PE 1's transports lack it or it has VSHMEM_UCX_PEER_ERRORS=0\\)"
    -P ${PROJECT_SOURCE_DIR}/cmake/expect_output.cmake -- ${_cmd}
    ${CMAKE_CURRENT_SOURCE_DIR}/per_pe_env.sh 1 VSHMEM_UCX_PEER_ERRORS=0 $<TARGET_FILE:mpe_remote>)
  set_tests_properties(mpe.ucx_tcp_no_peer_errors_one_pe.vshmemrun.2 PROPERTIES
    LABELS "mpe;vshmemrun" TIMEOUT 60
    ENVIRONMENT "VSHMEM_BOOTSTRAP_TIMEOUT=60;VSHMEM_DEBUG=info;UCX_TLS=tcp;UCX_NET_DEVICES=lo")
endif()

# The plugin is required only when some PE is remote (a one-node job loads it if it can, for
# other PEs' global and static variables): with a broken plugin first on the search path a
# one-node job still runs, and a two-node job fails at init naming the PE and what to install.
set(_bogus_plugins ${CMAKE_CURRENT_BINARY_DIR}/bogus_plugins)
file(WRITE ${_bogus_plugins}/libvshmem_transport_ucx.so "not a shared library\n")
vshmem_add_mpe_test(NAME ucx_not_needed TARGET mpe_rma NPES 2 LAUNCHERS vshmemrun NO_GPU_RERUN
  ENV VSHMEM_PLUGIN_PATH=${_bogus_plugins})
vshmem_add_mpe_test(NAME ucx_unloadable TARGET mpe_remote NPES 2 LAUNCHERS vshmemrun NO_GPU_RERUN
  ENV VSHMEM_PLUGIN_PATH=${_bogus_plugins}
  WILL_FAIL_REGEX "PE [01]: shmem_init: the remote path cannot load .*libvshmem_transport_ucx.so.*install UCX")

# What the fence (ucp_worker_fence) and the barrier (posted signals) still order, and operations in
# flight when shmem_finalize starts (flush, then endpoints closed in flush mode), over TCP and
# shared memory, with the target's thread performing everything too.
foreach(_tls sm tcp)
  set(_ucx_env ${_ucx_env_${_tls}})
  vshmem_add_mpe_test(NAME ucx_${_tls}_order TARGET mpe_remote ARGS order NPES 2 4
    LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV ${_ucx_env})
  vshmem_add_mpe_test(NAME ucx_${_tls}_finalize_inflight TARGET mpe_remote ARGS finalize NPES 2 4
    LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV ${_ucx_env})
endforeach()
# Over TCP with peer failure handling the operations go through a data endpoint without it
# (VSHMEM_UCX_DATA_ENDPOINT; its zero-copy put): the fence, a get, an atomic and the barrier after
# puts of 256 KiB, and PE 0's info line that says the data endpoint is used. With it off, the same
# rounds on the endpoint with peer failure handling (emulated puts).
vshmem_add_mpe_test(NAME ucx_tcp_order_bulk TARGET mpe_remote ARGS order_bulk NPES 2 4
  LAUNCHERS vshmemrun TIMEOUT 90 NO_GPU_RERUN ENV ${_ucx_env_tcp} VSHMEM_DEBUG=info
  OUTPUT_REGEX "PE 0: info: ucx: PE [0-9]+: a data endpoint without peer failure handling carries the operations \\(lanes tcp")
# VSHMEM_UCX_ATOMICS=auto: over TCP the data endpoint has no peer failure handling, so atomics on
# the peer's heap are UCX's (CPU mode), exact under contention with the node-local peers' CPU
# atomics on the same word (4 PEs); with the data endpoint off, the target's.
vshmem_add_mpe_test(NAME ucx_tcp_atomics_auto TARGET mpe_api_amo NPES 2 4 LAUNCHERS vshmemrun
  LAUNCHER_ARGS --simulate-nodes 2 TIMEOUT 60 NO_GPU_RERUN ENV ${_ucx_env_tcp} VSHMEM_DEBUG=info
  OUTPUT_REGEX "PE 0: info: ucx: PE [0-9]+: atomics on its host heap by UCX \\(CPU mode\\)")
vshmem_add_mpe_test(NAME ucx_tcp_atomics_auto_no_data_ep TARGET mpe_api_amo NPES 2
  LAUNCHERS vshmemrun LAUNCHER_ARGS --simulate-nodes 2 TIMEOUT 60 NO_GPU_RERUN
  ENV ${_ucx_env_tcp} VSHMEM_DEBUG=info VSHMEM_UCX_DATA_ENDPOINT=0
  OUTPUT_REGEX "PE 0: info: ucx: PE 1: atomics on its host heap at the target")
vshmem_add_mpe_test(NAME ucx_tcp_order_bulk_off TARGET mpe_remote ARGS order_bulk NPES 2
  LAUNCHERS vshmemrun TIMEOUT 90 NO_GPU_RERUN ENV ${_ucx_env_tcp} VSHMEM_UCX_DATA_ENDPOINT=0)
vshmem_add_mpe_test(NAME ucx_target_ops_order TARGET mpe_remote ARGS order NPES 2 LAUNCHERS
  vshmemrun TIMEOUT 60 NO_GPU_RERUN
  ENV UCX_TLS=tcp UCX_NET_DEVICES=lo VSHMEM_UCX_RMA=target VSHMEM_UCX_ATOMICS=target)
# The device proxy (issue #14) end to end on the host: host threads post to a ring in ordinary
# memory through the device's producer protocol; the runtime's proxy thread drains it into UCX.
vshmem_add_mpe_test(NAME device_proxy_host SOURCES device_proxy_host.cpp LAUNCHERS vshmemrun
  LAUNCHER_ARGS --simulate-nodes 2 NPES 2 4 TIMEOUT 60 NO_GPU_RERUN ENV UCX_TLS=sm,self)
vshmem_add_mpe_test(NAME device_proxy_host_tcp TARGET mpe_device_proxy_host LAUNCHERS vshmemrun
  LAUNCHER_ARGS --simulate-nodes 2 NPES 2 TIMEOUT 60 NO_GPU_RERUN
  ENV UCX_TLS=tcp UCX_NET_DEVICES=lo)

# Endpoints created from both sides at once, with the first operations posted while the
# connections are still being set up (over TCP, UCX's default choice, and shared memory).
foreach(_tls default tcp sm)
  set(_ucx_env ${_ucx_env_${_tls}})
  # UCX's default under mpirun too (mpe.remote.pmix aborted on the GPU machine's UCX 1.16).
  set(_launchers vshmemrun)
  if(_tls STREQUAL "default")
    list(APPEND _launchers pmix)
  endif()
  vshmem_add_mpe_test(NAME ucx_${_tls}_connect TARGET mpe_remote ARGS connect NPES 2 4 5
    LAUNCHERS ${_launchers} TIMEOUT 60 NO_GPU_RERUN ENV ${_ucx_env})
endforeach()
# Over TCP alone UCX loads no shared-memory transport, and the plugin leaves their
# MM_ERROR_HANDLING key alone: UCX 1.16 and later printed "invalid configuration:
# MM_ERROR_HANDLING=y" at every worker's creation when it was set (UCX 1.13 never warns).
foreach(_n 2 4 5)
  set_tests_properties(mpe.ucx_tcp_connect.vshmemrun.${_n} PROPERTIES
    FAIL_REGULAR_EXPRESSION "invalid configuration")
endforeach()

# Atomics by UCX on one PE and by the target on another would not be atomic with respect to each
# other: PEs that disagree on VSHMEM_UCX_ATOMICS fail at init, naming the setting and a PE.
vshmem_add_mpe_test(NAME ucx_atomics_disagree TARGET mpe_remote ARGS atomics_disagree NPES 2
  LAUNCHERS vshmemrun TIMEOUT 60 NO_GPU_RERUN ENV UCX_TLS=sm,self
  WILL_FAIL_REGEX "VSHMEM_UCX_ATOMICS differs between PEs \\(PE 0: auto, PE 1: network\\)")
