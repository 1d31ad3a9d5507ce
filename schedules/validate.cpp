#include "schedules/validate.hpp"

#include <map>
#include <tuple>

#include "schedules/dry_run.hpp"
#include "schedules/transfer.hpp"

namespace dtwin::sched {
namespace {

using Mark = std::pair<int, int>;              // (rank, index in its list)
using Key = std::tuple<ActionKind, int, int>;  // (kind, stage, microbatch)

std::string rank_str(int rank) {
  return "rank " + std::to_string(rank);
}

class Validator {
 public:
  Validator(const Schedule& schedule) : s_(schedule), layout_(schedule.layout) {
    // Index of each action on each rank, for counts and order checks.
    positions_.resize(s_.ranks.size());
    for (size_t r = 0; r < s_.ranks.size(); ++r)
      for (size_t i = 0; i < s_.ranks[r].size(); ++i) {
        const Action& a = s_.ranks[r][i];
        positions_[r][{a.kind, a.stage, a.microbatch}].push_back(static_cast<int>(i));
      }
  }

  void run(Expect expect) {
    check_ranges_and_placement();
    check_counts();
    check_order();
    if (expect == Expect::ComputeOnly) {
      check_compute_only();
    } else {
      check_communication();
      check_sync();
    }
    check_deadlock();
  }

 private:
  [[noreturn]] void fail(const std::string& message, std::vector<Mark> marks = {}) const {
    throw ScheduleError(message, render_grid(s_, marks));
  }

  const std::vector<int>& where(int rank, ActionKind kind, int stage, int mb) const {
    static const std::vector<int> none;
    auto it = positions_[rank].find({kind, stage, mb});
    return it == positions_[rank].end() ? none : it->second;
  }
  int count(int rank, ActionKind kind, int stage, int mb) const {
    return static_cast<int>(where(rank, kind, stage, mb).size());
  }
  std::vector<Mark> marks_of(int rank, ActionKind kind, int stage, int mb) const {
    std::vector<Mark> marks;
    for (int i : where(rank, kind, stage, mb)) marks.push_back({rank, i});
    return marks;
  }
  std::string name(int rank, int index) const { return to_string(s_.ranks[rank][index]); }

  void check_ranges_and_placement() const {
    const int world = static_cast<int>(s_.ranks.size());
    if (world != layout_.group_count())
      fail("the schedule has " + std::to_string(world) + " action lists, the layout dp*pp = " +
           std::to_string(layout_.group_count()) + " TP groups");
    for (int r = 0; r < world; ++r)
      for (int i = 0; i < static_cast<int>(s_.ranks[r].size()); ++i) {
        const Action& a = s_.ranks[r][i];
        if (a.stage < 0 || a.stage >= layout_.num_stages())
          fail(name(r, i) + " on " + rank_str(r) + ": stage out of range [0, " +
                   std::to_string(layout_.num_stages()) + ")",
               {{r, i}});
        if (has_microbatch(a.kind) && (a.microbatch < 0 || a.microbatch >= layout_.microbatches))
          fail(name(r, i) + " on " + rank_str(r) + ": microbatch out of range [0, " +
                   std::to_string(layout_.microbatches) + ")",
               {{r, i}});
        const int home = layout_.group_of_stage(a.stage, r);
        if (home == r) continue;
        const bool also_home = !s_.ranks[home].empty() && stage_appears(home, a.stage);
        if (also_home)
          fail("stage " + std::to_string(a.stage) + " runs on " + rank_str(r) + " and " +
                   rank_str(home) + " of pipeline " + std::to_string(layout_.dp_index(r)) +
                   ": a stage runs on exactly one rank per pipeline (" + rank_str(home) + ")",
               {{r, i}});
        fail(name(r, i) + " on " + rank_str(r) + ": stage " + std::to_string(a.stage) +
                 " belongs on " + rank_str(home) + " (" + placement_rule() + ")",
             {{r, i}});
      }
  }

  std::string placement_rule() const {
    return layout_.placement == StagePlacement::VShape ? "V placement" : "stage mod pp";
  }

  bool stage_appears(int rank, int stage) const {
    for (const Action& a : s_.ranks[rank])
      if (a.stage == stage) return true;
    return false;
  }

  // Calls fn(rank, stage) for every stage that the layout places on each rank.
  template <typename Fn>
  void for_each_rank_stage(Fn fn) const {
    for (int r = 0; r < static_cast<int>(s_.ranks.size()); ++r)
      for (int v = 0; v < layout_.virtual_stages; ++v)
        fn(r, layout_.stage_of(layout_.pipeline_rank(r), v));
  }

  void check_counts() const {
    for_each_rank_stage([&](int r, int stage) {
      for (int mb = 0; mb < layout_.microbatches; ++mb) {
        const std::string what = "stage " + std::to_string(stage) + " microbatch " +
                                 std::to_string(mb) + " on " + rank_str(r) + ": ";
        const int f = count(r, ActionKind::F, stage, mb);
        if (f != 1)
          fail(what + std::to_string(f) + " forwards (F), expected 1",
               marks_of(r, ActionKind::F, stage, mb));
        const int b = count(r, ActionKind::B, stage, mb), in = count(r, ActionKind::I, stage, mb);
        if (b + in != 1)
          fail(what + std::to_string(b + in) + " backwards (B + I), expected 1",
               marks_of(r, ActionKind::B, stage, mb));
        const int w = count(r, ActionKind::W, stage, mb);
        if (w != in)
          fail(what + std::to_string(w) + " weight backwards (W) for " + std::to_string(in) +
                   " input backwards (I), expected I = W",
               marks_of(r, ActionKind::W, stage, mb));
      }
    });
  }

  void check_order() const {
    for (int r = 0; r < static_cast<int>(s_.ranks.size()); ++r)
      for (int i = 0; i < static_cast<int>(s_.ranks[r].size()); ++i) {
        const Action& a = s_.ranks[r][i];
        ActionKind before = ActionKind::F;
        if (a.kind == ActionKind::W)
          before = ActionKind::I;
        else if (a.kind != ActionKind::B && a.kind != ActionKind::I)
          continue;
        const auto& prior = where(r, before, a.stage, a.microbatch);
        if (!prior.empty() && prior.front() > i)
          fail(name(r, i) + " runs before " + name(r, prior.front()) + " on " + rank_str(r),
               {{r, i}, {r, prior.front()}});
      }
  }

  void check_compute_only() const {
    for (int r = 0; r < static_cast<int>(s_.ranks.size()); ++r)
      for (int i = 0; i < static_cast<int>(s_.ranks[r].size()); ++i)
        if (!is_compute(s_.ranks[r][i].kind))
          fail(name(r, i) + " on " + rank_str(r) +
                   ": a compute-only schedule holds only F, B, I and W",
               {{r, i}});
  }

  // The producer of a transfer must precede the SEND, the consumer must follow the RECV.
  void check_transfer(int r, int i, const Action& a) const {
    const bool forward = a.kind == ActionKind::SEND_F || a.kind == ActionKind::RECV_F;
    const bool send = is_send(a.kind);
    const Endpoint peer = peer_of(layout_, r, a);
    const Action& expected = peer.action;
    if (expected.stage < 0 || expected.stage >= layout_.num_stages())
      fail(name(r, i) + " on " + rank_str(r) + ": no stage " + std::to_string(expected.stage) +
               " to exchange with",
           {{r, i}});
    if (peer.rank == r)
      fail(name(r, i) + " on " + rank_str(r) + ": stage " + std::to_string(expected.stage) +
               " is on the same rank, nothing to transfer",
           {{r, i}});
    const int matches = count(peer.rank, expected.kind, expected.stage, expected.microbatch);
    if (matches != 1)
      fail(name(r, i) + " on " + rank_str(r) + " has " +
               (matches == 0 ? "no matching " : std::to_string(matches) + " matching ") +
               to_string(expected) + " on " + rank_str(peer.rank),
           {{r, i}});
    if (count(r, a.kind, a.stage, a.microbatch) != 1)
      fail(name(r, i) + " appears more than once on " + rank_str(r), {{r, i}});
    // Local producer (for sends) or consumer (for receives).
    std::vector<int> local =
        where(r, forward ? ActionKind::F : ActionKind::B, a.stage, a.microbatch);
    if (!forward && local.empty()) local = where(r, ActionKind::I, a.stage, a.microbatch);
    if (local.empty()) return;  // counts already checked
    if (send && local.front() > i)
      fail(name(r, i) + " on " + rank_str(r) + " runs before " + name(r, local.front()) +
               " produces its tensor",
           {{r, i}, {r, local.front()}});
    if (!send && local.front() < i)
      fail(name(r, i) + " on " + rank_str(r) + " runs after " + name(r, local.front()) +
               " consumes its tensor",
           {{r, i}, {r, local.front()}});
  }

  void check_communication() const {
    const int last = layout_.num_stages() - 1;
    for (int r = 0; r < static_cast<int>(s_.ranks.size()); ++r)
      for (int i = 0; i < static_cast<int>(s_.ranks[r].size()); ++i) {
        const Action& a = s_.ranks[r][i];
        if (is_p2p(a.kind)) {
          check_transfer(r, i, a);
          continue;
        }
        // Every cross-rank input has its receive.
        Action recv{a.stage, ActionKind::RECV_F, a.microbatch};
        if (a.kind == ActionKind::B || a.kind == ActionKind::I)
          recv.kind = ActionKind::RECV_B;
        else if (a.kind != ActionKind::F)
          continue;
        const Endpoint from = sender_of(layout_, r, recv);
        if (from.action.stage < 0 || from.action.stage > last || from.rank == r) continue;
        if (count(r, recv.kind, recv.stage, recv.microbatch) == 0)
          fail(name(r, i) + " on " + rank_str(r) + " has no " + to_string(recv) +
                   " for its input from " + rank_str(from.rank),
               {{r, i}});
      }
  }

  int last_compute(int r, int stage, bool backward_only) const {
    int last = -1;
    for (int i = 0; i < static_cast<int>(s_.ranks[r].size()); ++i) {
      const Action& a = s_.ranks[r][i];
      if (a.stage == stage && is_compute(a.kind) && !(backward_only && a.kind == ActionKind::F))
        last = i;
    }
    return last;
  }

  // F, B, I and W (or F only) of `stage` on rank r.
  int count_compute(int r, int stage, bool forward_only) const {
    int n = 0;
    for (const Action& a : s_.ranks[r])
      if (a.stage == stage && is_compute(a.kind) && (!forward_only || a.kind == ActionKind::F)) ++n;
    return n;
  }

  // Whether a B, I or W of `stage` runs on rank r between indices `from` and `to`.
  bool backward_between(int r, int stage, int from, int to) const {
    for (int i = from + 1; i < to; ++i)
      if (s_.ranks[r][i].stage == stage && is_backward(s_.ranks[r][i].kind)) return true;
    return false;
  }

  std::string stage_on(int stage, int r) const {
    return "stage " + std::to_string(stage) + " on " + rank_str(r);
  }
  std::string zero_str() const { return "layout.zero " + std::to_string(layout_.zero); }

  // Fails unless `stage` on rank r has `expected` actions of the stage-level `kind`; `why`, if
  // given, says why in parentheses.
  void check_stage_count(int r, int stage, ActionKind kind, int expected,
                         const std::string& why = "") const {
    const int n = count(r, kind, stage, kNoMicrobatch);
    if (n == expected) return;
    fail(stage_on(stage, r) + " has " + std::to_string(n) + " " + std::string(kind_name(kind)) +
             ", expected " + std::to_string(expected) + (why.empty() ? "" : " (" + why + ")"),
         marks_of(r, kind, stage, kNoMicrobatch));
  }

  void check_sync() const {
    const bool sync = layout_.dp > 1;
    const bool after_optim = layout_.dp_sync == DpSync::WeightAverage;
    if (layout_.zero < 0 || layout_.zero > 3) fail(zero_str() + ": expected 0, 1, 2 or 3");
    if (layout_.zero > 0 && layout_.dp_sync != DpSync::AllReduce)
      fail(zero_str() + " needs layout.dp_sync allreduce, got " +
           std::string(kDpSyncNames.name(layout_.dp_sync)));
    if (const std::string error = shard_error(layout_); !error.empty()) fail(error);
    const bool allreduce = sync && layout_.zero == 0;
    for_each_rank_stage([&](int r, int stage) {
      const std::string what = stage_on(stage, r);
      check_stage_count(r, stage, ActionKind::OPTIM, 1);
      const int optim = where(r, ActionKind::OPTIM, stage, kNoMicrobatch).front();
      const int last = last_compute(r, stage, false);
      if (optim < last)
        fail(what + ": OPTIM runs before the stage's compute ends", {{r, optim}, {r, last}});
      check_stage_count(r, stage, ActionKind::ALLREDUCE, allreduce ? 1 : 0,
                        !sync       ? "dp = 1"
                        : allreduce ? "dp > 1"
                                    : zero_str() + " reduces gradients with REDUCE_GRAD");
      check_sharding(r, stage, optim);
      if (!allreduce) return;
      const int at = where(r, ActionKind::ALLREDUCE, stage, kNoMicrobatch).front();
      if (after_optim && at < optim)
        fail(what + ": weight-average ALLREDUCE must follow OPTIM", {{r, at}, {r, optim}});
      const int last_backward = last_compute(r, stage, true);
      if (!after_optim && (at < last_backward || at > optim))
        fail(what + ": gradient ALLREDUCE must come after the last backward and before OPTIM",
             {{r, at}});
    });
  }

  // The ZeRO actions of `stage` on rank r, whose OPTIM is at index `optim`.
  void check_sharding(int r, int stage, int optim) const {
    const std::string what = stage_on(stage, r), zero = zero_str();
    if (layout_.dp == 1 || layout_.zero == 0) {
      const std::string why = layout_.dp == 1 ? "dp = 1" : zero;
      for (ActionKind kind : {ActionKind::UNSHARD, ActionKind::RESHARD, ActionKind::REDUCE_GRAD})
        check_stage_count(r, stage, kind, 0, why);
      return;
    }
    const bool layers = layout_.zero == 3 && layout_.zero3_gather == Zero3Gather::Layer;
    const int passes = count_compute(r, stage, false);
    if (layers) {
      check_stage_count(r, stage, ActionKind::REDUCE_GRAD, count_compute(r, stage, true),
                        "dp > 1, " + zero + " with zero3_gather layer: one per microbatch");
      check_stage_count(r, stage, ActionKind::UNSHARD, passes,
                        "zero3_gather layer: one per F, B, I and W");
    } else {
      check_stage_count(r, stage, ActionKind::REDUCE_GRAD, 1, "dp > 1, " + zero);
    }
    const std::vector<int> reduces = where(r, ActionKind::REDUCE_GRAD, stage, kNoMicrobatch);
    const int reduce = reduces.back();
    if (reduce < last_compute(r, stage, true) || reduce > optim)
      fail(what + ": REDUCE_GRAD must come after the last backward and before OPTIM",
           {{r, reduce}});
    for (size_t k = 1; k < reduces.size(); ++k)
      if (!backward_between(r, stage, reduces[k - 1], reduces[k]))
        fail(what + ": no backward between two REDUCE_GRAD",
             {{r, reduces[k - 1]}, {r, reduces[k]}});
    if (layout_.zero == 3) {
      check_gathered(r, stage);
      return;
    }
    check_stage_count(r, stage, ActionKind::RESHARD, 0, zero + " shards no parameters");
    check_stage_count(r, stage, ActionKind::UNSHARD, 1,
                      zero + " gathers the updated parameters after OPTIM");
    const int unshard = where(r, ActionKind::UNSHARD, stage, kNoMicrobatch).front();
    if (unshard < optim)
      fail(what + ": UNSHARD must follow OPTIM with " + zero +
               " (it gathers the updated parameters)",
           {{r, unshard}, {r, optim}});
  }

  // With zero 3: UNSHARD and RESHARD of `stage` on rank r alternate, starting with UNSHARD;
  // every compute action of the stage runs in between; the step ends resharded.
  void check_gathered(int r, int stage) const {
    const std::string parameters = "stage " + std::to_string(stage) + "'s parameters";
    bool gathered = false;
    int last = -1;
    for (int i = 0; i < static_cast<int>(s_.ranks[r].size()); ++i) {
      const ActionKind kind = s_.ranks[r][i].kind;
      if (s_.ranks[r][i].stage != stage) continue;
      if (kind == ActionKind::UNSHARD || kind == ActionKind::RESHARD) {
        if (gathered == (kind == ActionKind::UNSHARD))
          fail(name(r, i) + " on " + rank_str(r) + ": " + parameters + " are " +
                   (gathered ? "already" : "not") +
                   " gathered; UNSHARD and RESHARD alternate, starting with UNSHARD",
               {{r, i}});
        gathered = !gathered;
        last = i;
      } else if (is_compute(kind) && !gathered) {
        fail(name(r, i) + " on " + rank_str(r) + " runs while " + parameters +
                 " are sharded: with layout.zero 3 every F, B, I and W runs between an UNSHARD "
                 "and a RESHARD",
             {{r, i}});
      }
    }
    if (gathered)
      fail(stage_on(stage, r) +
               " ends the step with its parameters gathered: with layout.zero 3 "
               "every UNSHARD has its RESHARD",
           {{r, last}});
  }

  void check_deadlock() const {
    const DryRun run = dry_run(s_);
    if (!run.deadlocked) return;
    std::string message = "deadlock: in the unit-time dry run no rank can proceed;";
    std::vector<Mark> marks;
    for (int r = 0; r < static_cast<int>(s_.ranks.size()); ++r) {
      if (run.executed[r] == static_cast<int>(s_.ranks[r].size())) continue;
      message.append(" ").append(rank_str(r)).append(" waits at ");
      message.append(name(r, run.executed[r])).append(";");
      marks.push_back({r, run.executed[r]});
    }
    message.pop_back();
    fail(message, marks);
  }

  const Schedule& s_;
  const Layout& layout_;
  std::vector<std::map<Key, std::vector<int>>> positions_;
};

}  // namespace

void validate(const Schedule& schedule, Expect expect) {
  Validator(schedule).run(expect);
}

}  // namespace dtwin::sched
