// CUDA-event timing of a rank's actions, compiled only in CUDA builds (DTWIN_HAVE_CUDA).
#pragma once

#include <ATen/cuda/CUDAEvent.h>

#include <functional>
#include <vector>

#include "runtime/action_timer.hpp"

namespace dtwin::rt::cuda {

/// Seconds between timing CUDA events recorded on the current stream before and after `body`,
/// waiting until the device ran it.
double stream_seconds(const std::function<void()>& body);

/// Records a timing CUDA event on the current stream before and after each action. The step
/// starts with the device idle (begin_step synchronizes it) and an anchor event whose run-clock
/// time is the host's at that moment; finish_step waits for the step's last event and sets each
/// action's start and end to the anchor's time plus the events' elapsed times (CUDA's event
/// resolution, about 0.5 µs). A communication action's (SEND, RECV, ALLREDUCE, UNSHARD,
/// REDUCE_GRAD) exposed_comm becomes its duration on the stream less the wait for a later
/// replica that the host measured (its host duration less its host exposed_comm): the stream
/// waited for the transfer or collective that long. SEND only queues its transfer on NCCL's
/// stream, so it lasts about nothing; its receiver's RECV holds the wait. OPTIM, RESHARD and the
/// passes keep the host's exposed_comm (0, or a pass's tensor-parallel collectives).
class EventTimer : public ActionTimer {
 public:
  explicit EventTimer(const RunClock& clock) : clock_(clock) {}

  void begin_step() override;
  void start(std::size_t i) override;
  void end(std::size_t i) override;
  void finish_step(std::vector<trace::TimedAction>& events) override;

 private:
  /// The timing events of action i, created on first use.
  at::cuda::CUDAEvent& event(std::vector<at::cuda::CUDAEvent>& events, std::size_t i);

  const RunClock& clock_;
  at::cuda::CUDAEvent anchor_{cudaEventDefault};
  double anchor_seconds_ = 0;
  std::vector<at::cuda::CUDAEvent> starts_, ends_;
};

}  // namespace dtwin::rt::cuda
