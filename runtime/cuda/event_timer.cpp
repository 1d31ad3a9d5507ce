#include "runtime/cuda/event_timer.hpp"

#include <c10/cuda/CUDAFunctions.h>

#include <algorithm>

#include "schedules/schedule.hpp"

namespace dtwin::rt::cuda {

double stream_seconds(const std::function<void()>& body) {
  at::cuda::CUDAEvent start(cudaEventDefault), end(cudaEventDefault);  // timing enabled
  start.record();
  body();
  end.record();
  end.synchronize();
  return static_cast<double>(start.elapsed_time(end)) / 1e3;
}

at::cuda::CUDAEvent& EventTimer::event(std::vector<at::cuda::CUDAEvent>& events, std::size_t i) {
  while (events.size() <= i) events.emplace_back(cudaEventDefault);  // timing enabled
  return events[i];
}

void EventTimer::begin_step() {
  c10::cuda::device_synchronize();
  anchor_seconds_ = clock_.now();
  anchor_.record();
}

void EventTimer::start(std::size_t i) {
  event(starts_, i).record();
}

void EventTimer::end(std::size_t i) {
  event(ends_, i).record();
}

void EventTimer::finish_step(std::vector<trace::TimedAction>& events) {
  if (events.empty()) return;
  ends_.at(events.size() - 1).synchronize();
  const auto seconds = [&](const at::cuda::CUDAEvent& e) {
    return anchor_seconds_ + static_cast<double>(anchor_.elapsed_time(e)) / 1e3;
  };
  for (std::size_t i = 0; i < events.size(); ++i) {
    trace::TimedAction& event = events[i];
    const sched::ActionKind kind = event.action.kind;
    const bool communicates = sched::is_p2p(kind) || sched::is_collective(kind);
    // What the host measured as waiting for a later replica (the DP collectives leave it out of
    // their exposed time; the host waits for their results, so its duration holds that wait).
    const double replica_wait = std::max(0.0, event.end - event.start - event.exposed_comm);
    event.start = seconds(starts_.at(i));
    event.end = seconds(ends_.at(i));
    if (communicates) event.exposed_comm = std::max(0.0, event.end - event.start - replica_wait);
  }
}

}  // namespace dtwin::rt::cuda
