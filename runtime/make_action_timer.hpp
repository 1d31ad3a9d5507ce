// The action timer for a rank's device: the CPU's (runtime/action_timer.hpp) or, in CUDA builds,
// the CUDA-event timer of runtime/cuda/event_timer.hpp.
#pragma once

#include <torch/types.h>

#include <memory>

#include "runtime/action_timer.hpp"
#include "runtime/clock.hpp"

namespace dtwin::rt {

/// For the CPU, host times, and each compute action's thread CPU time (TimedAction::cpu) when the
/// rank computes on one thread (with more, other threads do part of the work); for a CUDA device
/// one that records CUDA events (CUDA builds only, DTWIN_HAVE_CUDA).
std::unique_ptr<ActionTimer> make_action_timer(const torch::Device& device, const RunClock& clock);

}  // namespace dtwin::rt
