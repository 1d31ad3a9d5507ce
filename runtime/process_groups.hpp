// Rendezvous stores and process groups, the one place that builds them: c10d's TCPStore and a
// c10d backend per group (ProcessGroupGloo; ProcessGroupNCCL in CUDA builds).
#pragma once

#include <torch/types.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/spec/settings.hpp"

namespace dtwin::rt {

/// A TCPStore at host:port: the server when `server` (port 0 binds a free port, read it back
/// with getPort()), else a client that connects to it. Every wait gives up after `timeout_s`
/// seconds. Throws std::runtime_error "cannot host the rendezvous store on HOST:PORT
/// (MASTER_PORT): ..." when the port is taken, or "cannot reach the rendezvous store at
/// HOST:PORT (MASTER_ADDR:MASTER_PORT): ..." when no server answers in that time.
c10::intrusive_ptr<c10d::TCPStore> tcp_store(const std::string& host, int port, bool server,
                                             double timeout_s);

/// `text` as a store value, and a store value back as text.
std::vector<uint8_t> store_bytes(const std::string& text);
std::string store_text(const std::vector<uint8_t>& value);

/// Where a rank's Gloo connections bind, as in PyTorch: the interfaces named in `interfaces`
/// (GLOO_SOCKET_IFNAME) when there are any, else the local `address`.
struct GlooBinding {
  std::string address;
  std::vector<std::string> interfaces;
  /// The tensors live on a GPU: Gloo gets them through host copies (HostStagedBackend).
  bool host_staged = false;
};

/// The address of this host's interface that routes to `host` (MASTER_ADDR; "127.0.0.1" for
/// 127.0.0.1), as text. Throws std::runtime_error when `host` does not resolve or no interface
/// routes to it.
std::string local_address_toward(const std::string& host);

/// The process group `name` of `size` ranks, this one being `rank`, rendezvousing through the
/// keys under "name/" in `store`. `backend` is runtime.backend: gloo (over TCP from where `bind`
/// says; CUDA tensors through host copies when bind.host_staged) or "nccl" (CUDA tensors; only
/// in builds with DTWIN_HAVE_CUDA). Collective and point-to-point waits give up after `timeout_s`
/// seconds. Blocks until all `size` ranks joined; throws UserError for nccl in a CPU-only build,
/// and c10::Error when the rendezvous fails. The first call turns c10d's flight recorder off for
/// the process (TORCH_FR_BUFFER_SIZE=0; process_groups.cpp says why) and makes it ignore SIGPIPE,
/// so that a write to a lost peer fails with EPIPE, which Gloo reports naming the peer.
c10::intrusive_ptr<c10d::Backend> make_group(Backend backend,
                                             const c10::intrusive_ptr<c10d::Store>& store,
                                             const std::string& name, int rank, int size,
                                             double timeout_s, const GlooBinding& bind);

/// Runs body(rank, group) on `ranks` threads of this process, each rank `rank` of one group
/// `name` of `backend` (Gloo over loopback sockets, or NCCL) rendezvousing through a TCPStore on
/// a free port (measurements and tests that need a real group without processes); returns when
/// every thread has, rethrowing the first member's exception when a body threw (the others then
/// fail their collectives with it, at the latest after 60 s). With `on_gpus` each thread first
/// makes thread_group_device(true, rank) its current device, and Gloo takes the GPU tensors
/// through host copies.
void run_as_thread_group(
    int ranks, const std::string& name,
    const std::function<void(int, const c10::intrusive_ptr<c10d::Backend>&)>& body,
    Backend backend = Backend::Gloo, bool on_gpus = false);

/// The device of thread `rank` of run_as_thread_group: GPU rank mod visible_gpus() `on_gpus`,
/// else the CPU.
torch::Device thread_group_device(bool on_gpus, int rank);

}  // namespace dtwin::rt
