// The configuration table: every environment variable vshmem reads, with its type, default and
// meaning, in one place. The environment is read and parsed once (at shmem_init, or at the first
// read before it); SHMEM_INFO, vshmem-info and the README's table are printed from this table.
//
// A variable is named by a string literal that must be in the table: `env::get("VSHMEM_FOO")` does
// not compile until VSHMEM_FOO has a row below (consteval lookup), so a variable cannot be read
// without being documented.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/common/status.hpp"

namespace vshmem::config {

enum class Type {
  kSize,     // OpenSHMEM size: 1048576, 512k, 1.5G
  kInt,      // integer in [lo, hi]
  kBool,     // 1/0, yes/no, true/false, on/off
  kSeconds,  // positive decimal number of seconds, at most a week
  kChoice,   // one of `choices` ("a|b|c"), case-insensitive
  kText,     // any text
  kForeign,  // another program's variable (UCX, the shell, a launcher): consulted, never checked
};

struct Var {
  const char* name;
  Type type;
  const char* fallback;  // the default as users read it ("" = none); parsed for typed variables
  const char* doc;
  const char* choices = nullptr;  // kChoice
  long long lo = 0, hi = 0;       // kInt
  bool internal = false;          // set by vshmemrun for its PEs: not for users
};

// The order is the order of SHMEM_INFO, vshmem-info and the README.
inline constexpr Var kVars[] = {
    {"VSHMEM_SYMMETRIC_SIZE", Type::kSize,
     "the GPU's memory (rounded up to whole GiB) on the GPU heap; `1G` on the host heap",
     "symmetric heap budget per PE (virtual: physical memory is committed in chunks as "
     "`shmem_malloc` needs it, so a large budget costs address space only). Sizes take "
     "`k`/`m`/`g`/`t` suffixes and decimals (`1.5G`). PE 0's default holds for every PE. "
     "`VSHMEM_SYMMETRIC_SIZE` wins over `SHMEM_SYMMETRIC_SIZE`, which wins over "
     "`NVSHMEM_SYMMETRIC_SIZE`"},
    {"SHMEM_SYMMETRIC_SIZE", Type::kSize, "", "OpenSHMEM's name of `VSHMEM_SYMMETRIC_SIZE`"},
    {"NVSHMEM_SYMMETRIC_SIZE", Type::kSize, "", "NVSHMEM's name of `VSHMEM_SYMMETRIC_SIZE`"},
    {"VSHMEM_HEAP_CHUNK_SIZE", Type::kSize, "32M",
     "the step in which physical memory is committed (rounded to the allocation granularity)"},
    {"VSHMEM_HEAP_INITIAL", Type::kSize, "0",
     "physical memory committed at `shmem_init` (must be the same on every PE): `shmem_malloc` "
     "calls within it never grow the heap (a growth is a collective mapping step of "
     "milliseconds)"},
    {"VSHMEM_CHECK_SYMMETRY", Type::kBool, "on in debug builds",
     "check, before the call, that every PE passes the same arguments to `shmem_malloc` & co "
     "(a bootstrap collective per call, every job); a mismatch fails the call on every PE with a "
     "message instead of corrupting the heap. Without it, a job on one node still compares the "
     "arguments of `shmem_malloc`, `_calloc`, `_align` and `_malloc_with_hints` after the call "
     "(through the shared host pages: NULL on every PE, the heap left alike)"},
    {"VSHMEM_BOOTSTRAP", Type::kChoice, "auto",
     "how the PEs meet: `auto`, `socket` (vshmemrun), `mpi`, `pmix`", "auto|socket|mpi|pmix"},
    {"VSHMEM_BOOTSTRAP_PMIX_TCP", Type::kBool, "1",
     "under PMIx, the job's collectives after the first go over a TCP hub at PE 0 (flat cost, "
     "names missing PEs); `0` keeps them on PMIx fences (for sites where PEs cannot reach PE 0 "
     "over TCP; each collective then costs more than the last on OpenPMIx 5). PE 0's value "
     "decides"},
    {"VSHMEM_BOOTSTRAP_TIMEOUT", Type::kSeconds, "120",
     "seconds before a bootstrap operation gives up, naming the PEs that did not arrive"},
    {"VSHMEM_BACKEND", Type::kChoice, "auto",
     "where the heap lives: `cuda` (GPU memory), `host` (memfd), `auto`: GPU memory for programs "
     "that link the device library (`vshmem::device`) when a device is usable, host memory for "
     "the others (plain OpenSHMEM code loads and stores its symmetric objects with the CPU, which "
     "cannot reach GPU memory). `SHMEM_INFO` and `VSHMEM_DEBUG=info` say which was chosen and "
     "why; on the GPU heap a CPU load or store of a symmetric object ends the PE with a message "
     "naming the PE, the address and this variable instead of a bare SIGSEGV",
     "auto|cuda|host"},
    {"VSHMEM_DEVICE", Type::kInt, "local rank mod #GPUs", "the GPU of this PE", nullptr, 0,
     1 << 20},
    {"VSHMEM_WAIT", Type::kChoice, "auto",
     "how host-side waits poll: `spin`, `yield` (give the core away), `auto` (spin while the "
     "machine's PEs do not outnumber their CPUs, else yield); see Waits",
     "auto|spin|yield"},
    {"VSHMEM_BIND", Type::kChoice, "auto",
     "`auto`: in a one-node job (or one of several nodes whose PEs on this host have fewer than "
     "4 CPUs each) on the host heap whose PEs do not outnumber the CPUs, when the "
     "launcher left every PE the same affinity mask, `shmem_init` binds each PE (the thread that "
     "calls it, and the threads it starts later) to its own CPU of that mask, as Open MPI does "
     "(waits spin there: two PEs on one CPU would each wait a time slice for the other); `none`: "
     "leave affinity alone; see Waits",
     "auto|none"},
    {"VSHMEM_WAIT_LOOK_US", Type::kInt, "1000",
     "microseconds a sleeping wait on a variable (`shmem_wait_until` and its forms, "
     "`shmem_signal_wait_until`, `shmem_set_lock`) sleeps before it looks again: puts and "
     "atomics wake it at once, a store through `shmem_ptr` does not; see Waits",
     nullptr, 10, 100000000},
    {"VSHMEM_DEADLOCK_S", Type::kInt, "60",
     "seconds after which a one-node job whose PEs all wait inside vshmem calls (a wait, a "
     "barrier, a collective, a lock) is judged deadlocked: PE 0 ends it with a message naming "
     "each PE's call; only a warning where another thread or a GPU kernel could still end a wait "
     "(thread level above `SHMEM_THREAD_SINGLE`, GPU heap, device code); `0`: never; see Waits",
     nullptr, 0, 100000000},
    {"VSHMEM_HANDLE_TYPE", Type::kChoice, "auto",
     "how GPU memory is shared between PEs: `auto`, `fabric`, `posix_fd`", "auto|fabric|posix_fd"},
    {"VSHMEM_COMPRESSIBLE", Type::kBool, "0",
     "`1`: compressible GPU memory where the device supports it"},
    {"VSHMEM_NODE_ID", Type::kText, "hostname + boot id",
     "override the node identity (simulate several nodes on one machine)"},
    {"VSHMEM_DISABLE_P2P", Type::kBool, "0",
     "`1`: map no peer (every other PE takes the remote path, UCX)"},
    {"VSHMEM_UCX_ATOMICS", Type::kChoice, "auto",
     "who performs atomics on a remote PE's host heap: `auto` (UCX's atomics, kept coherent with "
     "CPU atomics by UCX's `ATOMIC_MODE=cpu`, on endpoints without peer failure handling, e.g. "
     "TCP's data endpoint; `target` elsewhere), `target` (a message to the target, which applies "
     "it with its CPU's atomics: atomic with respect to its node-local peers' and its own "
     "atomics) or `network` (`ucp_atomic_op_nbx` in UCX's default mode: the NIC's atomics where "
     "UCX has them, not atomic with respect to CPU atomics; UCX 1.16 has no atomic protocol for "
     "endpoints with peer failure handling). Must be the same on every PE. A GPU heap and global "
     "and static variables always get `target` (atomic with respect to device atomics)",
     "auto|network|target"},
    {"VSHMEM_UCX_RMA", Type::kChoice, "network",
     "`target`: every remote put and get goes through the target's progress thread, staged "
     "through host buffers (what a GPU heap gets when UCX cannot register GPU memory; for tests)",
     "network|target"},
    {"VSHMEM_UCX_SPIN_US", Type::kInt, "50 or 0",
     "microseconds the UCX progress thread (and a PE waiting for a remote peer's signal) keeps "
     "polling after the last message before it sleeps on the worker's event file descriptor; "
     "default 50 where this PE's CPUs are at least four times the node's PEs, else 0 (never "
     "spin: on a busy machine the spin takes the core from the thread that sends the next "
     "message)",
     nullptr, 0, 1000000},
    {"VSHMEM_UCX_CHUNK_KIB", Type::kInt, "512",
     "KiB per chunk of a staged remote transfer (a GPU heap UCX cannot register, or "
     "`VSHMEM_UCX_RMA=target`): each chunk goes through a page-locked buffer on both sides",
     nullptr, 4, 65536},
    {"VSHMEM_UCX_CHUNKS", Type::kInt, "8",
     "chunks of a staged remote transfer in flight at once (their copies to and from the heap "
     "overlap the network legs of the others)",
     nullptr, 1, 64},
    {"VSHMEM_UCX_STAGE_DIRECT", Type::kBool, "1",
     "`0`: staged transfers to a peer on the same host carry their bytes in UCX messages; by "
     "default the target's copy reads and writes the initiator's page-locked staging buffers "
     "directly, mapped through UCX's shared memory (`ucp_rkey_ptr`), where UCX and the memory "
     "provider allow it (`VSHMEM_DEBUG=info` says per peer)"},
    {"VSHMEM_UCX_PEER_ERRORS", Type::kBool, "1",
     "`0`: UCX endpoints without peer failure handling, as Open MPI's OSHMEM makes them. Over TCP "
     "UCX then puts with zero copy (endpoints with it get an emulated put over TCP, which "
     "`VSHMEM_UCX_DATA_ENDPOINT` goes around); a dead remote PE is then noticed when a transfer "
     "to it fails or by the time limits (`VSHMEM_BOOTSTRAP_TIMEOUT`), and over shared memory UCX "
     "may end the surviving PEs itself. One PE with `0` makes it so for the whole job"},
    {"VSHMEM_UCX_DATA_ENDPOINT", Type::kBool, "1",
     "where a remote PE's endpoint with peer failure handling has no zero-copy put (UCX over TCP "
     "emulates puts on such endpoints: a fifth of the bandwidth on the H200's host), a second "
     "endpoint without it carries the operations when it runs over TCP only, and the first one "
     "stays to watch the peer (a dead peer is still named). `0`: every operation on the endpoint "
     "with peer failure handling"},
    {"VSHMEM_UCX_PUT_MESSAGES", Type::kChoice, "auto",
     "`1`: puts to a remote PE whose endpoint is one TCP connection (host heaps) travel as "
     "vshmem's own messages of up to 1 MiB, performed on receipt and confirmed by one round trip "
     "per PE at quiet; `0`: UCX's put; `auto`: messages with UCX 1.13 and older, whose put over "
     "TCP has its target answer every 8 KiB (messages: 4x the put bandwidth over loopback), "
     "UCX's put from 1.14 on (1.16's zero-copy put is 2-4x faster than messages)",
     "auto|1|0"},
    {"VSHMEM_UCX_GET_MESSAGES", Type::kBool, "1",
     "gets of 8 KiB or more from a remote PE whose endpoint is one TCP connection (host "
     "heaps; a UCX without GPU memory support, since the destination is copied by the CPU) ask "
     "with vshmem's own message, and the peer answers from its heap with eager "
     "messages of up to 1 MiB, copied into the destination on arrival (UCX's get over TCP "
     "answers in 8 KiB fragments: messages 3x its bandwidth at 1 MiB with UCX 1.13, 1.5x at "
     "16 KiB with UCX 1.16); `0`: UCX's get"},
    {"VSHMEM_STATICS_UCX", Type::kBool, "1",
     "`0`: do not load the UCX plugin in a job whose PEs all map each other (then other PEs' "
     "global and static variables cannot be reached; a job with remote PEs loads it anyway)"},
    {"VSHMEM_PROXY_TIMEOUT", Type::kSeconds, "60",
     "seconds a device call to a PE behind the device proxy waits for a free request slot or for "
     "the proxy's answer before it traps with a message naming the PE and the call"},
    {"VSHMEM_PROXY_SLOTS", Type::kInt, "1024",
     "request slots of the device proxy's ring (rounded up to a power of two; 256 bytes each, "
     "pinned host memory)",
     nullptr, 1, 1 << 20},
    {"VSHMEM_INBOUND_LOOK_US", Type::kInt, "2",
     "where PEs sit behind the device proxy: how often (microseconds) this PE's kernels that wait "
     "in a vshmem call look, between them all, for a remote PE's atomic or small copy on this "
     "GPU (the inbound mailbox; each look is a read across PCIe); `0`: at every eighth poll of "
     "each wait",
     nullptr, 0, 1000000},
    {"VSHMEM_INBOUND_COPY_MAX", Type::kSize, "4k",
     "copies between this GPU and host memory that the remote path makes (a remote PE's put "
     "into this GPU's heap or get from it, this PE's side of a staged transfer) up to this size "
     "go through the inbound mailbox (a waiting kernel, else a one-thread kernel) instead of a "
     "stream copy, which may wait in a hardware queue behind kernels that wait for that very "
     "copy; at most 4k, `0`: never"},
    {"VSHMEM_PLUGIN_PATH", Type::kText, "", "extra folders (`:`-separated) searched for plugins"},
    {"VSHMEM_DEBUG", Type::kChoice, "warn",
     "messages: `error`, `warn`, `info`, `trace` (or 0-3); wins over `SHMEM_DEBUG` and "
     "`NVSHMEM_DEBUG`",
     "error|warn|info|trace|0|1|2|3"},
    {"SHMEM_DEBUG", Type::kText, "",
     "OpenSHMEM's switch: set at all, it means `VSHMEM_DEBUG=info`"},
    {"NVSHMEM_DEBUG", Type::kChoice, "",
     "NVSHMEM's name of `VSHMEM_DEBUG` (after `SHMEM_DEBUG`); its `VERSION` and `ABORT` mean "
     "`warn` and `error`",
     "error|warn|info|trace|0|1|2|3|version|abort"},
    {"SHMEM_VERSION", Type::kText, "", "set: PE 0 prints the version at start-up"},
    {"SHMEM_INFO", Type::kText, "", "set: PE 0 prints these variables at start-up"},
    {"NVSHMEM_VERSION", Type::kText, "", "NVSHMEM's name of `SHMEM_VERSION`"},
    {"NVSHMEM_INFO", Type::kText, "", "NVSHMEM's name of `SHMEM_INFO`"},
    {"VSHMEM_BOOTSTRAP_UID_ADDR", Type::kText, "see meaning",
     "`IPv4[:port]` where the process calling `shmemx_get_uniqueid` listens for the job's PEs. "
     "Default: the address of `VSHMEM_BOOTSTRAP_UID_IFNAME`, else of the first interface that is "
     "up and not loopback, else `127.0.0.1`; any free port"},
    {"NVSHMEM_BOOTSTRAP_UID_SESSION_ID", Type::kText, "",
     "NVSHMEM's name of `VSHMEM_BOOTSTRAP_UID_ADDR`"},
    {"VSHMEM_BOOTSTRAP_UID_IFNAME", Type::kText, "",
     "the interface whose IPv4 address `shmemx_get_uniqueid` listens on"},
    {"NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", Type::kText, "",
     "NVSHMEM's name of `VSHMEM_BOOTSTRAP_UID_IFNAME`"},
    {"VSHMEM_DEBUG_DEVICE", Type::kBool, "0",
     "`1`: device calls also check addresses and trap with a message (device code built with "
     "`NDEBUG`, the default there)"},
    {"VSHMEM_DEVICE_SCOPE", Type::kChoice, "auto",
     "`sys`: device memory operations at system scope even when every PE is on one GPU (where "
     "`.gpu` scope is used by default)",
     "auto|sys"},
    {"VSHMEM_ENABLE_MULTICAST", Type::kBool, "0",
     "`1`: make a multicast region over the heap when every PE's GPU reports "
     "`CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED` (must be the same on every PE; see \"Multicast "
     "and NVLink fabric\"). Never set "
     "it on GPU hosts others share: a faulty multicast setup can take a host's GPUs out of "
     "service"},
    {"VSHMEM_SOCKET_ADDR", Type::kText, "", "the launcher's bootstrap socket", nullptr, 0, 0, true},
    {"VSHMEM_SOCKET_DIR", Type::kText, "", "the job's private socket directory", nullptr, 0, 0,
     true},
    {"VSHMEM_JOB_ID", Type::kText, "", "the job's name", nullptr, 0, 0, true},
    {"VSHMEM_JOB_SECRET", Type::kText, "", "the job's shared secret", nullptr, 0, 0, true},
    {"VSHMEM_RANK", Type::kInt, "", "this PE's number", nullptr, 0, 1 << 20, true},
    {"VSHMEM_NPES", Type::kInt, "", "the number of PEs", nullptr, 1, 1 << 20, true},
    {"VSHMEM_LAUNCHER_PID", Type::kInt, "", "the launcher's process id", nullptr, 2, 1 << 30, true},
    {"VSHMEM_LAUNCHER_START", Type::kInt, "", "the launcher's start time", nullptr, 1, (1ll << 62),
     true},
    {"UCX_TLS", Type::kForeign, "UCX's",
     "read by UCX for the remote path: which transports (`tcp`, `sm`, `rc`, `ud`, `dc`, "
     "`cuda_copy`, ...) it may use"},
    {"UCX_NET_DEVICES", Type::kForeign, "UCX's",
     "read by UCX: which devices (`mlx5_0:1`, `eth0`, `lo`) it may use (other `UCX_*` too)"},
    {"UCX_MM_ERROR_HANDLING", Type::kForeign, "UCX's (on with UCX 1.16 and later: vshmem's)",
     "read by UCX: peer failure handling on shared memory. With UCX 1.16 and later vshmem turns "
     "it on unless this or `UCX_POSIX_ERROR_HANDLING` is set, so that a dead PE on the node is "
     "named instead of UCX ending the survivor"},
    {"UCX_POSIX_ERROR_HANDLING", Type::kForeign, "UCX's",
     "read by UCX: the same for its posix shared-memory transport alone"},
    {"UCX_ERROR_SIGNALS", Type::kForeign, "empty (vshmem's)",
     "UCX's signal handlers (SIGSEGV, SIGBUS, ...): vshmem sets it empty before loading UCX, "
     "unless it is set, so that vshmem's report of a CPU access to GPU memory and the "
     "application's own handlers keep working"},
    {"CUDA_MODULE_LOADING", Type::kForeign, "CUDA's (`LAZY`)",
     "CUDA's kernel loading: where PEs span nodes, `shmem_init` sets `EAGER` before CUDA starts "
     "in the process (and `vshmemrun` sets it for such jobs), unless it is set: with `LAZY` a "
     "kernel's first launch waits for the running kernels, which can wait for a remote PE in "
     "the same state (a deadlock)"},
    {"XDG_RUNTIME_DIR", Type::kForeign, "",
     "where the job's private socket directory goes (`$XDG_RUNTIME_DIR/vshmem/<job>`) when it is "
     "a directory of ours with mode 0700; else `/tmp/vshmem-<uid>/<job>`"},
    {"PMIX_RANK", Type::kForeign, "", "set by a PMIx launcher: `VSHMEM_BOOTSTRAP=auto` picks PMIx"},
    {"OMPI_COMM_WORLD_RANK", Type::kForeign, "",
     "set by Open MPI's mpirun: `VSHMEM_BOOTSTRAP=auto` picks MPI"},
    {"PMI_RANK", Type::kForeign, "", "set by a PMI launcher: `VSHMEM_BOOTSTRAP=auto` picks MPI"},
    {"PMI_SIZE", Type::kForeign, "", "set by a PMI launcher: `VSHMEM_BOOTSTRAP=auto` picks MPI"},
    {"SLURM_JOB_ID", Type::kForeign, "",
     "inside a Slurm allocation `vshmemrun` starts the PEs with `srun`"},
    {"PATH", Type::kForeign, "", "where `vshmemrun` looks for the program it starts"},
};
inline constexpr size_t kVarCount = std::size(kVars);

// Index of a variable in kVars; only ever evaluated at compile time, where a name missing from
// the table ends compilation.
consteval size_t index_of(std::string_view name) {
  for (size_t i = 0; i < kVarCount; ++i) {
    if (std::string_view(kVars[i].name) == name) return i;
  }
  throw "environment variable missing from the table in runtime/common/config.hpp";
}

// A variable of the table, named by a literal: Name("VSHMEM_BACKEND").
class Name {
 public:
  consteval Name(const char* name) : index_(index_of(name)) {}  // NOLINT: implicit on purpose
  size_t index() const { return index_; }
  const Var& var() const { return kVars[index_]; }
  const char* str() const { return kVars[index_].name; }

 private:
  size_t index_;
};

// One variable as read from the environment and parsed by its type.
struct Value {
  bool exists = false;  // in the environment, perhaps empty
  std::string text;     // what it says; empty values count as unset
  Status status;        // a malformed value: names the variable, the value and why
  uint64_t size = 0;    // kSize (the default when unset and the default is a size)
  long long integer = 0;
  bool flag = false;
  double seconds = 0;
  bool present() const { return exists && !text.empty(); }
};

// Reads every variable of the table from the environment (again) and parses it. The result is
// the first malformed value's error; shmem_init fails with it. Reads before shmem_init load the
// table on first use.
Status load();
// The value, from the last load (the first call loads).
const Value& value(Name name);
const Value& value_at(size_t index);

// One line: "NAME=value" or "NAME unset (default: ...)", for SHMEM_INFO and vshmem-info.
std::string describe(size_t index);
// The README's table (markdown), one row per variable.
std::string markdown_table();

}  // namespace vshmem::config
