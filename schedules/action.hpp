// One step of a schedule: (stage, kind, microbatch), with the canonical text form of
// torch.distributed.pipelining (`0F1`, `2B3`, `1SEND_F0`, `1RECV_B2`, `0ALLREDUCE`, `0UNSHARD`,
// `1RESHARD`, `0REDUCE_GRAD`, `0OPTIM`).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dtwin::sched {

/// What an action does. The order is the one reports list kinds in.
enum class ActionKind {
  F,            ///< forward of one microbatch through one stage
  B,            ///< full backward (inputs and weights)
  I,            ///< backward w.r.t. the stage's inputs only
  W,            ///< backward w.r.t. the stage's weights only
  SEND_F,       ///< send the stage's output activation to the next stage
  RECV_F,       ///< receive the stage's input activation from the previous stage
  SEND_B,       ///< send the gradient of the stage's input to the previous stage
  RECV_B,       ///< receive the gradient of the stage's output from the next stage
  ALLREDUCE,    ///< gradient (or weight) sync of the stage over its data-parallel group
  UNSHARD,      ///< all-gather of the stage's parameter shards over its data-parallel group
  RESHARD,      ///< free the stage's gathered parameters, keep its shard (no communication)
  REDUCE_GRAD,  ///< reduce-scatter of the stage's gradients over its data-parallel group
  OPTIM,        ///< optimizer step of the stage
};

inline constexpr int kNoMicrobatch = -1;

/// One entry of a rank's action list: `kind` applied to `stage` (0 .. pp x v - 1) and
/// `microbatch` (0 .. microbatches - 1).
struct Action {
  int stage = 0;
  ActionKind kind = ActionKind::F;
  int microbatch = kNoMicrobatch;  ///< kNoMicrobatch for the stage-level kinds (see has_microbatch)

  friend bool operator==(const Action&, const Action&) = default;
};

/// Kind name as in the text form ("F", "SEND_B", "ALLREDUCE", ...).
std::string_view kind_name(ActionKind kind);

/// True for F, B, I, W.
bool is_compute(ActionKind kind);
/// True for B, I, W.
bool is_backward(ActionKind kind);
/// True for SEND_F, RECV_F, SEND_B, RECV_B.
bool is_p2p(ActionKind kind);
/// True for SEND_F and SEND_B.
bool is_send(ActionKind kind);
/// True for RECV_F and RECV_B.
bool is_receive(ActionKind kind);
/// True for the collectives over a stage's data-parallel group: ALLREDUCE, UNSHARD, REDUCE_GRAD.
bool is_collective(ActionKind kind);
/// True for the ZeRO/FSDP kinds: UNSHARD, RESHARD, REDUCE_GRAD.
bool is_sharding(ActionKind kind);
/// True for the kinds that carry a microbatch index: all but the stage-level ALLREDUCE, UNSHARD,
/// RESHARD, REDUCE_GRAD and OPTIM.
bool has_microbatch(ActionKind kind);

/// The figure of a compute action's kind: `f`, `b`, `i` or `w` for F, B, I or W, `optimizer`
/// for OPTIM (seconds, FLOPs, whatever the caller measures). Throws std::logic_error for the
/// other kinds.
double of_kind(ActionKind kind, double f, double b, double i, double w, double optimizer);

/// Canonical text form: stage, kind, microbatch (omitted for the stage-level kinds), e.g.
/// "1SEND_F0", "0REDUCE_GRAD".
std::string to_string(const Action& action);

/// Parses the canonical text form; std::nullopt if `text` is not exactly one action.
std::optional<Action> parse_action(std::string_view text);

}  // namespace dtwin::sched
