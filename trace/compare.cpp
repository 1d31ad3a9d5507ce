#include "trace/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "base/user_error.hpp"

namespace dtwin::trace {
namespace {

using Events = std::vector<TimedAction>;

constexpr ActionKind kAllKinds[] = {
    ActionKind::F,         ActionKind::B,       ActionKind::I,       ActionKind::W,
    ActionKind::SEND_F,    ActionKind::RECV_F,  ActionKind::SEND_B,  ActionKind::RECV_B,
    ActionKind::ALLREDUCE, ActionKind::UNSHARD, ActionKind::RESHARD, ActionKind::REDUCE_GRAD,
    ActionKind::OPTIM};

std::string times(int count) {
  if (count == 1) return "once";
  return std::to_string(count) + " times";
}

// The ranks of a timeline; throws on a negative rank.
std::set<int> ranks_of(const Events& events, const char* side) {
  std::set<int> ranks;
  for (const TimedAction& e : events) {
    if (e.rank < 0)
      throw UserError(std::string(side) + " trace has a negative rank " + std::to_string(e.rank));
    ranks.insert(e.rank);
  }
  return ranks;
}

void check_same_ranks(const std::set<int>& predicted, const std::set<int>& measured) {
  if (predicted == measured) {
    const int world = static_cast<int>(predicted.size());
    for (int r = 0; r < world; ++r)
      if (!predicted.count(r))
        throw UserError("the traces' ranks are not 0.." + std::to_string(world - 1) + ": rank " +
                        std::to_string(r) + " has no actions");
    return;
  }
  std::string message;
  if (predicted.size() != measured.size())
    message = "predicted has " + std::to_string(predicted.size()) + " ranks, measured " +
              std::to_string(measured.size()) + ": ";
  for (int r : measured)
    if (!predicted.count(r))
      throw UserError(message + "measured rank " + std::to_string(r) +
                      " is missing from the prediction");
  for (int r : predicted)
    if (!measured.count(r))
      throw UserError(message + "predicted rank " + std::to_string(r) +
                      " is missing from the measurement");
}

using Multiset = std::map<std::string, int>;  // action name -> count

std::map<int, Multiset> actions_per_rank(const Events& events) {
  std::map<int, Multiset> actions;
  for (const TimedAction& e : events) ++actions[e.rank][to_string(e.action)];
  return actions;
}

// Throws naming the first action of `rank` whose count differs between the two multisets:
// `predicted` (the first predicted step's) and `measured` (that of step `step` on `side`,
// "measured" or "predicted").
void check_same_actions(int rank, const std::string& side, int step, const Multiset& predicted,
                        const Multiset& measured) {
  const std::string where = " in " + side + " step " + std::to_string(step);
  const std::string who = "rank " + std::to_string(rank);
  // First the actions run more often than predicted, then those run less often.
  for (const bool more : {true, false}) {
    const Multiset& other = more ? predicted : measured;
    for (const auto& [name, count] : more ? measured : predicted) {
      const auto it = other.find(name);
      if (it == other.end())
        throw UserError(more ? who + " ran " + name + where +
                                   " but the prediction has no such action"
                             : who + " did not run " + name + where + " but the prediction has it");
      const int ran = more ? count : it->second, planned = more ? it->second : count;
      if (more ? planned < ran : ran < planned)
        throw UserError(who + " ran " + name + " " + times(ran) + where +
                        " but the prediction has it " + times(planned));
    }
  }
}

// The time an action blocks its rank, as summarize counts it: the whole duration for compute,
// the exposed transfer time for communication.
double blocking_time(const TimedAction& e) {
  const bool compute = is_compute(e.action.kind) || e.action.kind == ActionKind::OPTIM;
  return compute ? e.end - e.start : e.exposed_comm;
}

struct Sum {
  double total = 0;
  int count = 0;
  void add(double value) { total += value, ++count; }
  double mean() const { return count ? total / count : 0; }
};

}  // namespace

double Comparison::busy_error_s() const {
  double sum = 0;
  for (const RankComparison& r : ranks) sum += r.compute_s.error() + r.comm_s.error();
  return ranks.empty() ? 0 : sum / ranks.size();
}

double Comparison::idle_error_s() const {
  double sum = 0;
  for (const RankComparison& r : ranks) sum += r.idle_s.error();
  return ranks.empty() ? 0 : sum / ranks.size();
}

double Comparison::gap_share_s(const KindComparison& kind) const {
  return world_size > 0 ? kind.blocking_error_s() / world_size : 0;
}

std::optional<Figure> KindComparison::mean_core_wait_s() const {
  if (!mean_cpu_s) return std::nullopt;
  return Figure{mean_s.predicted - mean_cpu_s->predicted - mean_inner_comm_s->predicted,
                mean_s.measured - mean_cpu_s->measured - mean_inner_comm_s->measured};
}

std::optional<Comparison::CoreErrors> Comparison::core_error_s() const {
  std::optional<CoreErrors> sums;
  for (const KindComparison& k : kinds) {
    if (!k.mean_cpu_s) continue;
    if (!sums) sums.emplace();
    const double per_rank = static_cast<double>(k.count_per_step) / world_size;
    sums->cpu_s += per_rank * k.mean_cpu_s->error();
    sums->wait_s += per_rank * k.mean_core_wait_s()->error();
    sums->inner_comm_s += per_rank * k.mean_inner_comm_s->error();
  }
  return sums;
}

double Figure::relative_error() const {
  if (measured != 0) return (predicted - measured) / measured;
  return predicted == 0 ? 0 : std::numeric_limits<double>::quiet_NaN();
}

Comparison compare_timelines(const Events& predicted, const Events& measured,
                             const StepSummary* predicted_summary,
                             const StepSummary* measured_summary) {
  if (predicted.empty()) throw UserError("the predicted trace has no actions");
  if (measured.empty()) throw UserError("the measured trace has no actions");
  std::map<int, Events> predicted_steps;
  for (const TimedAction& e : predicted) predicted_steps[e.step].push_back(e);

  std::map<int, Events> steps;
  for (const TimedAction& e : measured) steps[e.step].push_back(e);
  Comparison c;
  c.predicted_steps = static_cast<int>(predicted_steps.size());
  c.dropped_first_step = steps.size() > 1;
  if (c.dropped_first_step) steps.erase(steps.begin());
  c.measured_steps = static_cast<int>(steps.size());
  Events kept;
  for (const auto& [step, events] : steps) kept.insert(kept.end(), events.begin(), events.end());

  // Validation: the same ranks, and per rank the same actions in every step of both sides.
  const std::set<int> ranks = ranks_of(predicted, "the predicted");
  check_same_ranks(ranks, ranks_of(kept, "the measured"));
  c.world_size = static_cast<int>(ranks.size());
  const std::map<int, Multiset> predicted_actions =
      actions_per_rank(predicted_steps.begin()->second);
  for (const auto& [side, side_steps] :
       {std::pair{"predicted", &predicted_steps}, std::pair{"measured", &steps}})
    for (const auto& [step, events] : *side_steps) {
      const std::map<int, Multiset> step_actions = actions_per_rank(events);
      for (const auto& [rank, actions] : predicted_actions) {
        const auto it = step_actions.find(rank);
        if (it == step_actions.end())
          throw UserError(std::string(side) + " step " + std::to_string(step) +
                          " has no actions on rank " + std::to_string(rank));
        check_same_actions(rank, side, step, actions, it->second);
      }
    }
  for (const auto& [side, summary] :
       {std::pair{"predicted", predicted_summary}, std::pair{"measured", measured_summary}})
    if (summary && static_cast<int>(summary->ranks.size()) != c.world_size)
      throw UserError(std::string("the ") + side + " summary has " +
                      std::to_string(summary->ranks.size()) + " ranks, the traces " +
                      std::to_string(c.world_size));

  // Step time, bubble and per-rank totals.
  const StepSummary p = summarize_steps(predicted, c.world_size, false);
  const StepSummary m = summarize_steps(kept, c.world_size, false);
  c.step_time_s = {p.step_time_s, m.step_time_s};
  c.predicted_step_std_s = p.step_time_std_s;
  c.measured_step_std_s = m.step_time_std_s;
  c.bubble_fraction = {p.bubble_fraction, m.bubble_fraction};
  for (int r = 0; r < c.world_size; ++r)
    c.ranks.push_back({r,
                       {p.ranks[r].compute_s, m.ranks[r].compute_s},
                       {p.ranks[r].comm_s, m.ranks[r].comm_s},
                       {p.ranks[r].idle_s, m.ranks[r].idle_s}});

  // Mean durations per kind and per (rank, action).
  std::map<ActionKind, std::pair<Sum, Sum>> kinds, blocking, cpu, inner_comm, comm_cpu;
  std::map<std::pair<int, std::string>, std::pair<Sum, Sum>> actions;
  for (const bool is_measured : {false, true})
    for (const TimedAction& e : is_measured ? kept : predicted) {
      auto side = [&](auto& sums) -> Sum& {
        auto& pair = sums[e.action.kind];
        return is_measured ? pair.second : pair.first;
      };
      side(kinds).add(e.end - e.start);
      side(blocking).add(blocking_time(e));
      if (e.cpu > 0) {
        side(cpu).add(e.cpu);
        side(inner_comm).add(e.exposed_comm);
        side(comm_cpu).add(e.comm_cpu);
      }
      auto& pair = actions[{e.rank, to_string(e.action)}];
      (is_measured ? pair.second : pair.first).add(e.end - e.start);
    }
  for (ActionKind kind : kAllKinds) {
    const auto it = kinds.find(kind);
    if (it == kinds.end()) continue;
    const auto& [p_sum, m_sum] = it->second;
    const auto& [p_block, m_block] = blocking.at(kind);
    KindComparison k{kind,
                     p_sum.count / c.predicted_steps,
                     {p_sum.mean(), m_sum.mean()},
                     {p_block.mean(), m_block.mean()}};
    // CPU times only where every action of the kind, on both sides, has one.
    const auto on_cores = cpu.find(kind);
    if (on_cores != cpu.end() && on_cores->second.first.count == p_sum.count &&
        on_cores->second.second.count == m_sum.count) {
      k.mean_cpu_s = Figure{on_cores->second.first.mean(), on_cores->second.second.mean()};
      const auto& [p_comm, m_comm] = inner_comm.at(kind);
      k.mean_inner_comm_s = Figure{p_comm.mean(), m_comm.mean()};
      const auto& [p_comm_cpu, m_comm_cpu] = comm_cpu.at(kind);
      k.mean_comm_cpu_s = Figure{p_comm_cpu.mean(), m_comm_cpu.mean()};
    }
    c.kinds.push_back(k);
  }
  for (const auto& [key, sums] : actions)
    c.top_actions.push_back({key.first, key.second, {sums.first.mean(), sums.second.mean()}});
  std::stable_sort(c.top_actions.begin(), c.top_actions.end(),
                   [](const ActionComparison& a, const ActionComparison& b) {
                     return std::abs(a.duration_s.error()) > std::abs(b.duration_s.error());
                   });
  if (c.top_actions.size() > 10) c.top_actions.resize(10);

  if (predicted_summary && measured_summary) {
    bool exchanged = false, ring = false;
    for (int r = 0; r < c.world_size; ++r) {
      const RankSummary &p = predicted_summary->ranks[r], &m = measured_summary->ranks[r];
      c.memory.push_back({r, {p.peak_memory_bytes, m.peak_memory_bytes}});
      c.all_to_all.push_back({r, {p.all_to_all_bytes, m.all_to_all_bytes}});
      c.cp_exchange.push_back({r, {p.cp_exchange_bytes, m.cp_exchange_bytes}});
      exchanged = exchanged || p.all_to_all_bytes > 0 || m.all_to_all_bytes > 0;
      ring = ring || p.cp_exchange_bytes > 0 || m.cp_exchange_bytes > 0;
    }
    if (!exchanged) c.all_to_all.clear();
    if (!ring) c.cp_exchange.clear();
    for (int r = 0; r < c.world_size; ++r) {
      const RankSummary &p = predicted_summary->ranks[r], &m = measured_summary->ranks[r];
      if (p.dp_sent_bytes + p.dp_received_bytes + m.dp_sent_bytes + m.dp_received_bytes == 0)
        continue;
      c.dp_bytes.push_back({r,
                            {p.dp_sent_bytes, m.dp_sent_bytes},
                            {p.dp_received_bytes, m.dp_received_bytes},
                            m.interface_sent_bytes,
                            m.interface_received_bytes,
                            m.interface_sent_packets,
                            m.interface_received_packets});
    }
    if (predicted_summary->load_imbalance > 0 && measured_summary->load_imbalance > 0)
      c.load_imbalance =
          Figure{predicted_summary->load_imbalance, measured_summary->load_imbalance};
    if (predicted_summary->peak_load_imbalance > 0 && measured_summary->peak_load_imbalance > 0)
      c.peak_load_imbalance =
          Figure{predicted_summary->peak_load_imbalance, measured_summary->peak_load_imbalance};
  }
  return c;
}

std::vector<ActionKind> explaining_kinds(const Comparison& c) {
  const double gap = c.step_time_s.error();
  if (gap == 0) return {};
  std::vector<const KindComparison*> same_sign;
  double sum = 0;
  for (const KindComparison& k : c.kinds)
    if (k.blocking_error_s() * gap > 0) {
      same_sign.push_back(&k);
      sum += std::abs(k.blocking_error_s());
    }
  std::stable_sort(same_sign.begin(), same_sign.end(), [](auto* a, auto* b) {
    return std::abs(a->blocking_error_s()) > std::abs(b->blocking_error_s());
  });
  std::vector<ActionKind> kinds;
  double covered = 0;
  for (const KindComparison* k : same_sign) {
    if (kinds.size() == 3 || covered >= 0.8 * sum) break;
    kinds.push_back(k->kind);
    covered += std::abs(k->blocking_error_s());
  }
  return kinds;
}

}  // namespace dtwin::trace
