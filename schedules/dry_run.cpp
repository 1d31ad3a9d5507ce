#include "schedules/dry_run.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "schedules/transfer.hpp"

namespace dtwin::sched {
namespace {

constexpr int kKinds = static_cast<int>(ActionKind::OPTIM) + 1;
constexpr double kNotYet = std::numeric_limits<double>::quiet_NaN();

// End times of finished actions, keyed by (replica, stage, kind, microbatch).
class Finished {
 public:
  explicit Finished(const Layout& layout)
      : layout_(layout),
        end_(static_cast<size_t>(layout.dp) * layout.num_stages() * kKinds * layout.microbatches,
             kNotYet) {}

  std::optional<double> get(int replica, int stage, ActionKind kind, int mb) const {
    if (stage < 0 || stage >= layout_.num_stages() || mb < 0 || mb >= layout_.microbatches)
      return std::nullopt;
    double t = end_[index(replica, stage, kind, mb)];
    if (std::isnan(t)) return std::nullopt;
    return t;
  }
  void set(int replica, const Action& a, double t) {
    if (a.stage < 0 || a.stage >= layout_.num_stages() || a.microbatch < 0 ||
        a.microbatch >= layout_.microbatches)
      return;
    end_[index(replica, a.stage, a.kind, a.microbatch)] = t;
  }

 private:
  size_t index(int replica, int stage, ActionKind kind, int mb) const {
    return ((static_cast<size_t>(replica) * layout_.num_stages() + stage) * kKinds +
            static_cast<int>(kind)) *
               layout_.microbatches +
           mb;
  }
  const Layout& layout_;
  std::vector<double> end_;
};

// Arrivals at one collective of one stage.
struct Gate {
  int arrivals = 0;
  double last_arrival = 0;
};

// Time at which the input gradient of stage `stage` microbatch `mb` exists (B or I ran).
std::optional<double> input_grad(const Finished& done, int replica, int stage, int mb) {
  if (auto t = done.get(replica, stage, ActionKind::B, mb)) return t;
  return done.get(replica, stage, ActionKind::I, mb);
}

// Earliest time the inputs of `a` exist, or nullopt while one is missing.
std::optional<double> inputs_ready(const Layout& layout, const Finished& done, int replica,
                                   const Action& a) {
  const int last = layout.num_stages() - 1;
  switch (a.kind) {
    case ActionKind::F:
      if (a.stage == 0) return 0.0;
      return done.get(replica, a.stage - 1, ActionKind::F, a.microbatch);
    case ActionKind::B:
    case ActionKind::I: {
      auto fwd = done.get(replica, a.stage, ActionKind::F, a.microbatch);
      if (!fwd || a.stage == last) return fwd;
      auto grad = input_grad(done, replica, a.stage + 1, a.microbatch);
      if (!grad) return std::nullopt;
      return std::max(*fwd, *grad);
    }
    case ActionKind::W:
      return done.get(replica, a.stage, ActionKind::I, a.microbatch);
    case ActionKind::RECV_F:
    case ActionKind::RECV_B: {
      const Action send = sender_of(layout, 0, a).action;
      return done.get(replica, send.stage, send.kind, send.microbatch);
    }
    default:
      return 0.0;
  }
}

}  // namespace

double unit_cost(ActionKind kind) {
  if (kind == ActionKind::B) return 2;
  return is_compute(kind) ? 1 : 0;
}

double DryRun::bubble_fraction() const {
  if (busy_units.empty() || step_units <= 0) return 0;
  double idle = 0;
  for (double busy : busy_units) idle += (step_units - busy) / step_units;
  return idle / busy_units.size();
}

DryRun dry_run(const Schedule& schedule) {
  const Layout& layout = schedule.layout;
  const int world = static_cast<int>(schedule.ranks.size());
  DryRun run;
  run.busy_units.assign(world, 0);
  run.executed.assign(world, 0);
  run.start.resize(world);
  std::vector<double> free_at(world, 0);
  Finished done(layout);
  // Collectives of stage s: the n-th one of a kind on each replica meet at one gate, released
  // once all dp replicas arrived.
  std::map<std::tuple<int, ActionKind, int>, Gate> gates;
  std::vector<std::map<std::pair<int, ActionKind>, int>> passed(world);  // per rank, per collective
  std::vector<char> arrived(world, 0);

  bool progress = true;
  while (progress) {
    progress = false;
    for (int rank = 0; rank < world; ++rank) {
      const ActionList& actions = schedule.ranks[rank];
      const int replica = layout.dp_index(rank);
      while (run.executed[rank] < static_cast<int>(actions.size())) {
        const Action& a = actions[run.executed[rank]];
        std::optional<double> ready;
        const bool collective =
            is_collective(a.kind) && a.stage >= 0 && a.stage < layout.num_stages();
        if (collective) {
          Gate& gate = gates[{a.stage, a.kind, passed[rank][{a.stage, a.kind}]}];
          if (!arrived[rank]) {
            arrived[rank] = 1;
            ++gate.arrivals;
            gate.last_arrival = std::max(gate.last_arrival, free_at[rank]);
            progress = true;
          }
          if (gate.arrivals >= layout.dp) ready = gate.last_arrival;
        } else {
          ready = inputs_ready(layout, done, replica, a);
        }
        if (!ready) break;
        arrived[rank] = 0;
        if (collective) ++passed[rank][{a.stage, a.kind}];
        const double start = std::max(free_at[rank], *ready);
        const double end = start + unit_cost(a.kind);
        run.start[rank].push_back(start);
        run.busy_units[rank] += unit_cost(a.kind);
        free_at[rank] = end;
        done.set(replica, a, end);
        ++run.executed[rank];
        progress = true;
      }
    }
  }
  for (int rank = 0; rank < world; ++rank) {
    if (run.executed[rank] < static_cast<int>(schedule.ranks[rank].size())) run.deadlocked = true;
    run.step_units = std::max(run.step_units, free_at[rank]);
  }
  return run;
}

}  // namespace dtwin::sched
