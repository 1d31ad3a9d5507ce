#include "runtime/action_timer.hpp"

#include <stdexcept>

#if DTWIN_HAVE_CUDA
#include "runtime/cuda/event_timer.hpp"
#endif

namespace dtwin::rt {

std::unique_ptr<ActionTimer> make_action_timer(const torch::Device& device, const RunClock& clock) {
  if (device.is_cpu()) return std::make_unique<ActionTimer>();
#if DTWIN_HAVE_CUDA
  if (device.is_cuda()) return std::make_unique<cuda::EventTimer>(clock);
#endif
  (void)clock;
  throw std::logic_error("no action timer for device " + device.str());
}

}  // namespace dtwin::rt
