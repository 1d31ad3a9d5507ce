#include "runtime/process_groups.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "base/user_error.hpp"
#include "runtime/clock.hpp"
#include "runtime/error_text.hpp"
#include "runtime/host_staged_backend.hpp"
#include "runtime/rank_device.hpp"

#if DTWIN_HAVE_CUDA
#include "runtime/cuda/nccl_group.hpp"
#endif

namespace dtwin::rt {

std::vector<uint8_t> store_bytes(const std::string& text) {
  return {text.begin(), text.end()};
}

std::string store_text(const std::vector<uint8_t>& value) {
  return {value.begin(), value.end()};
}

// The source address the kernel picks for a UDP socket connected to `host` (connecting a UDP
// socket sends nothing).
std::string local_address_toward(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (const int status = getaddrinfo(host.c_str(), "9", &hints, &found); status != 0)
    throw std::runtime_error("cannot resolve MASTER_ADDR '" + host + "': " + gai_strerror(status));
  std::string error = "no address";
  for (const addrinfo* a = found; a; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    const bool routed = connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
                        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
    error = routed ? error : std::strerror(errno);
    close(fd);
    if (!routed) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* address =
        local.ss_family == AF_INET6
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
    inet_ntop(local.ss_family, address, text, sizeof text);
    freeaddrinfo(found);
    return text;
  }
  freeaddrinfo(found);
  throw std::runtime_error("no interface of this host routes to MASTER_ADDR '" + host +
                           "': " + error);
}

c10::intrusive_ptr<c10d::TCPStore> tcp_store(const std::string& host, int port, bool server,
                                             double timeout_s) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = server;
  options.waitWorkers = false;
  options.timeout = to_milliseconds(timeout_s);
  try {
    return c10::make_intrusive<c10d::TCPStore>(host, options);
  } catch (const std::exception& error) {
    const std::string address = host + ":" + std::to_string(port);
    throw std::runtime_error(
        (server
             ? "cannot host the rendezvous store on " + address + " (MASTER_PORT): "
             : "cannot reach the rendezvous store at " + address + " (MASTER_ADDR:MASTER_PORT): ") +
        error_text(error));
  }
}

namespace {

// Turns c10d's flight recorder off for this process, once, before its first group exists (the
// recorder reads TORCH_FR_BUFFER_SIZE when the first group records). dtwin never dumps it, and in
// PyTorch 2.11 FlightRecorder::recordWithResetEnabled inserts each group into a map before it
// takes its lock (c10d/FlightRecorderDetail.hpp), so groups of one process collecting from
// several threads at once (run_as_thread_group) crashed in it: 9 of 25 runs of the
// gradient-bucket tests, none of 25 with the recorder off.
void disable_flight_recorder() {
  static const bool disabled = setenv("TORCH_FR_BUFFER_SIZE", "0", 1) == 0;
  (void)disabled;
}

// Gloo writes to its sockets with writev(2) and handles EPIPE, so it expects SIGPIPE ignored, as
// Python does at start-up. Without that, a rank whose write meets a lost peer's reset connection
// is killed by the signal, silently, instead of naming the peer.
void ignore_sigpipe() {
  static const bool ignored = std::signal(SIGPIPE, SIG_IGN) != SIG_ERR;
  (void)ignored;
}

// The Gloo device for an address (no interface) or an interface name, one per process while a
// group holds it. A device owns a progress thread that polls its sockets every 10 ms; one device
// per group gave each rank 6 such threads, whose wake-ups took the cores the passes need. Each
// group still makes its own connections on the shared device.
std::shared_ptr<::gloo::transport::Device> shared_device(const std::string& address,
                                                         const std::string& interface) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::weak_ptr<::gloo::transport::Device>>
      devices;
  const std::lock_guard<std::mutex> lock(mutex);
  std::weak_ptr<::gloo::transport::Device>& slot = devices[{address, interface}];
  std::shared_ptr<::gloo::transport::Device> device = slot.lock();
  if (!device) {
    device = interface.empty() ? c10d::ProcessGroupGloo::createDeviceForHostname(address)
                               : c10d::ProcessGroupGloo::createDeviceForInterface(interface);
    slot = device;
  }
  return device;
}

}  // namespace

c10::intrusive_ptr<c10d::Backend> make_group(Backend backend,
                                             const c10::intrusive_ptr<c10d::Store>& store,
                                             const std::string& name, int rank, int size,
                                             double timeout_s, const GlooBinding& bind) {
  disable_flight_recorder();
  ignore_sigpipe();
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(name, store);
  if (backend == Backend::Gloo) {
    auto options = c10d::ProcessGroupGloo::Options::create(to_milliseconds(timeout_s));
    if (bind.interfaces.empty()) options->devices.push_back(shared_device(bind.address, ""));
    for (const std::string& interface : bind.interfaces)
      options->devices.push_back(shared_device("", interface));
    auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, options);
    if (bind.host_staged) return c10::make_intrusive<HostStagedBackend>(std::move(gloo));
    return gloo;
  }
#if DTWIN_HAVE_CUDA
  return cuda::nccl_group(prefixed, rank, size, timeout_s);
#else
  throw UserError("runtime.backend: nccl needs a CUDA build of dtwin (DTWIN_CUDA)");
#endif
}

torch::Device thread_group_device(bool on_gpus, int rank) {
  return on_gpus ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(rank % visible_gpus()))
                 : torch::Device(torch::kCPU);
}

void run_as_thread_group(
    int ranks, const std::string& name,
    const std::function<void(int, const c10::intrusive_ptr<c10d::Backend>&)>& body, Backend backend,
    bool on_gpus) {
  constexpr double kTimeout = 60;  // s
  disable_flight_recorder();       // here, before the threads, which read the environment
  auto server = tcp_store("127.0.0.1", 0, true, kTimeout);
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(ranks);
  for (int rank = 0; rank < ranks; ++rank)
    threads.emplace_back([&, rank] {
      try {
        if (on_gpus) use_gpu(thread_group_device(true, rank).index());
        auto store = tcp_store("127.0.0.1", server->getPort(), false, kTimeout);
        body(rank,
             make_group(backend, store, name, rank, ranks, kTimeout, {"127.0.0.1", {}, on_gpus}));
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

}  // namespace dtwin::rt
