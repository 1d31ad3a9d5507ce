#include "runtime/make_action_timer.hpp"

#include <ATen/Parallel.h>

#include <stdexcept>

#include "base/cpu_clock.hpp"

#if DTWIN_HAVE_CUDA
#include "runtime/cuda/event_timer.hpp"
#endif

namespace dtwin::rt {
namespace {

// Host times as they are; each compute action's CPU time from the executing thread's clock.
class CpuTimer final : public ActionTimer {
 public:
  void begin_step() override { cpu_.clear(); }
  void start(std::size_t i) override {
    if (cpu_.size() <= i) cpu_.resize(i + 1);
    cpu_[i] = -thread_cpu_seconds();
  }
  void end(std::size_t i) override { cpu_.at(i) += thread_cpu_seconds(); }
  void finish_step(std::vector<trace::TimedAction>& events) override {
    if (at::get_num_threads() != 1) {  // other threads compute too: neither figure is the rank's
      for (trace::TimedAction& e : events) e.comm_cpu = 0;
      return;
    }
    for (std::size_t i = 0; i < events.size() && i < cpu_.size(); ++i) {
      const sched::ActionKind kind = events[i].action.kind;
      if (sched::is_compute(kind) || kind == sched::ActionKind::OPTIM) events[i].cpu = cpu_[i];
    }
  }

 private:
  std::vector<double> cpu_;  // per action of the step, in execution order
};

}  // namespace

std::unique_ptr<ActionTimer> make_action_timer(const torch::Device& device, const RunClock& clock) {
  if (device.is_cpu()) return std::make_unique<CpuTimer>();
#if DTWIN_HAVE_CUDA
  if (device.is_cuda()) return std::make_unique<cuda::EventTimer>(clock);
#endif
  (void)clock;
  throw std::logic_error("no action timer for device " + device.str());
}

}  // namespace dtwin::rt
