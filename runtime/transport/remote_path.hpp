// The remote path: peers whose memory is not mapped here (another node, GPUs without peer
// access, VSHMEM_DISABLE_P2P=1), reached through a transport plugin loaded at run time
// (plugin_abi.h; libvshmem_transport_ucx.so, on UCX's ucp). libvshmem never links the network
// library: a job whose peers all map never loads it.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/heap/data_segment.hpp"
#include "runtime/transport/peer_path.hpp"
#include "runtime/transport/plugin_abi.h"

namespace vshmem {

struct RemoteOptions {
  int my_pe = 0;
  int n_pes = 1;
  std::vector<uint8_t> remote;  // per PE: reached through this path
  uintptr_t heap_base = 0;
  size_t heap_size = 0;
  // The program's global and static variables: symmetric addresses inside it travel as
  // VSHMEM_TRANSPORT_STATIC_SEGMENT | offset. Outlives the path.
  const DataSegment* statics = nullptr;
  // Loading the plugin is optional (only the global and static variables need it): a PE that
  // cannot load it makes create() return null on every PE instead of an error.
  bool optional = false;
  std::chrono::milliseconds timeout{};
};

class RemotePath final : public PeerPath {
 public:
  // Collective over every PE of the job (when some pair of PEs is remote). Finds and loads the
  // plugin (VSHMEM_PLUGIN_PATH, next to libvshmem, the install directory); a PE that cannot
  // load it still takes part, and every PE then fails with a message naming it (or, with
  // options.optional, every PE gets null and *unavailable says who could not and why).
  static Result<std::unique_ptr<RemotePath>> create(Bootstrap& bootstrap, MemoryProvider& provider,
                                                    const RemoteOptions& options,
                                                    std::string* unavailable = nullptr);
  ~RemotePath() override;

  const char* name() const override { return plugin_.name; }
  Status put(int pe, void* dest, const void* source, size_t bytes) override;
  Status get(int pe, void* dest, const void* source, size_t bytes) override;
  Status put_nbi(int pe, void* dest, const void* source, size_t bytes) override;
  Status get_nbi(int pe, void* dest, const void* source, size_t bytes) override;
  Status atomic(int pe, const AtomicRequest& request, uint64_t* result) override;
  Status signal_add(int pe, uint64_t* word, uint64_t value) override;
  Status fence() override;
  Status quiet() override;

  // Collective: [offset, offset + bytes) of every PE's heap is now backed.
  Status add_region(uint64_t offset, size_t bytes);
  // The heap added so far is initialized: peers' operations on it are performed from now on
  // (plugin_abi.h). shmem_init calls it after its fills, before the job's first barrier.
  void serve() { plugin_.serve(plugin_.ctx); }
  void progress() { plugin_.progress(plugin_.ctx); }
  // Sleeps until a message for this PE arrives or timeout_us passed, after polling while the
  // network had traffic within spin_us (plugin_abi.h).
  void wait_event(int timeout_us, int spin_us = 0) {
    plugin_.wait_event(plugin_.ctx, timeout_us, spin_us);
  }
  // A remote peer whose connection the network saw break (it failed or exited), or -1; *cause
  // gets the network's words. Cheap; any thread.
  int failed_peer(std::string* cause) const;

 private:
  struct Host;
  RemotePath(Bootstrap& bootstrap, MemoryProvider& provider, RemoteOptions options);
  uint64_t offset_of(const void* sym) const {
    if (options_.statics != nullptr && options_.statics->contains(sym, 1)) {
      return VSHMEM_TRANSPORT_STATIC_SEGMENT | options_.statics->offset_of(sym);
    }
    return reinterpret_cast<uintptr_t>(sym) - options_.heap_base;
  }
  Status check(int rc, const char* err) const;

  std::unique_ptr<Host> host_;
  RemoteOptions options_;
  vshmem_transport_plugin plugin_{};
  bool loaded_ = false;
};

// The file name of a transport plugin ("ucx" -> libvshmem_transport_ucx.so) and where it is
// looked for, in order.
std::string transport_plugin_file(const char* kind);

}  // namespace vshmem
