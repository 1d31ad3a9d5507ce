#include "runtime/process_groups.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <chrono>
#include <stdexcept>

#include "runtime/clock.hpp"
#include "runtime/error_text.hpp"
#include "schedules/user_error.hpp"

#if DTWIN_HAVE_CUDA
#include "runtime/cuda/nccl_group.hpp"
#endif

namespace dtwin::rt {

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

c10::intrusive_ptr<c10d::Backend> make_group(Backend backend,
                                             const c10::intrusive_ptr<c10d::Store>& store,
                                             const std::string& name, int rank, int size,
                                             double timeout_s) {
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(name, store);
  if (backend == Backend::Gloo) {
    auto options = c10d::ProcessGroupGloo::Options::create(to_milliseconds(timeout_s));
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    return c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, options);
  }
#if DTWIN_HAVE_CUDA
  return cuda::nccl_group(prefixed, rank, size, timeout_s);
#else
  throw UserError("runtime.backend: nccl needs a CUDA build of dtwin (DTWIN_CUDA)");
#endif
}

}  // namespace dtwin::rt
