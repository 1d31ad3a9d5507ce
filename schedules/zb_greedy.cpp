#include <algorithm>
#include <limits>

#include "schedules/generators.hpp"

namespace dtwin::sched {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// One pipeline rank while the heuristic builds its list: the next microbatch of each kind (F,
// I and W each run in microbatch order), when the rank is next free and how long it has idled.
struct RankState {
  int f = 0, i = 0, w = 0;
  double clock = 0, idle = 0;
  bool last_was_i = true;  ///< which of F and I ran last, for 1F1B's alternation
};

class Greedy {
 public:
  Greedy(const Layout& layout, int memory_limit, const PassTimes& times)
      : pp_(layout.pp),
        m_(layout.microbatches),
        limit_(memory_limit),
        t_(times),
        ranks_(pp_),
        end_f_(pp_, std::vector<double>(m_, kNever)),
        end_i_(pp_, std::vector<double>(m_, kNever)),
        pipeline_(pp_) {}

  std::vector<ActionList> run() {
    for (int r = next_rank(); r >= 0; r = next_rank()) decide(r);
    return std::move(pipeline_);
  }

 private:
  // The unfinished rank that is free first (the lowest one on a tie): every action of another
  // rank that ends by its clock is then known.
  int next_rank() const {
    int best = -1;
    for (int r = 0; r < pp_; ++r)
      if (ranks_[r].w < m_ && (best < 0 || ranks_[r].clock < ranks_[best].clock)) best = r;
    return best;
  }

  // When F and I of rank r's next microbatches could start, as far as the actions placed so far
  // tell (kNever: not yet known, or F held back by the memory limit).
  double ready_f(int r) const {
    const RankState& s = ranks_[r];
    if (s.f == m_ || s.f - s.w >= limit_) return kNever;
    return r == 0 ? 0 : end_f_[r - 1][s.f] + t_.comm;
  }
  double ready_i(int r) const {
    const RankState& s = ranks_[r];
    if (s.i == s.f) return kNever;
    return r == pp_ - 1 ? end_f_[r][s.i] : end_i_[r + 1][s.i] + t_.comm;
  }

  // The earliest time at which an action not yet placed on another rank could make one of rank
  // r's passes ready.
  double earliest_unknown(int r) const {
    double t = kNever;
    for (int q = 0; q < pp_; ++q)
      if (q != r && ranks_[q].w < m_)
        t = std::min(t, ranks_[q].clock + std::min(t_.f, t_.i) + t_.comm);
    return t;
  }

  // W fills a gap before the next F or I if it fits, or, shorter than the gap, if idling would
  // make this rank's idle time the largest of the pipeline (Qi et al. 2024 §3.1).
  bool w_fills(int r, double gap) const {
    if (gap >= t_.w) return true;
    double most = 0;
    for (const RankState& s : ranks_) most = std::max(most, s.idle);
    return ranks_[r].idle + gap > most;
  }

  void decide(int r) {
    RankState& s = ranks_[r];
    const double f = ready_f(r), i = ready_i(r);
    const bool f_now = f <= s.clock, i_now = i <= s.clock;
    if (f_now && i_now) return place(r, s.last_was_i ? ActionKind::F : ActionKind::I);
    if (i_now) return place(r, ActionKind::I);
    if (f_now) return place(r, ActionKind::F);
    if (s.w < s.i && w_fills(r, std::min(f, i) - s.clock)) return place(r, ActionKind::W);
    const double wake = std::min({f, i, earliest_unknown(r)});
    s.idle += wake - s.clock;
    s.clock = wake;
  }

  void place(int r, ActionKind kind) {
    RankState& s = ranks_[r];
    int& next = kind == ActionKind::F ? s.f : kind == ActionKind::I ? s.i : s.w;
    pipeline_[r].push_back({r, kind, next});
    const double duration = kind == ActionKind::F ? t_.f : kind == ActionKind::I ? t_.i : t_.w;
    s.clock += duration;
    if (kind == ActionKind::F) end_f_[r][next] = s.clock;
    if (kind == ActionKind::I) end_i_[r][next] = s.clock;
    if (kind != ActionKind::W) s.last_was_i = kind == ActionKind::I;
    ++next;
  }

  int pp_, m_, limit_;
  PassTimes t_;
  std::vector<RankState> ranks_;
  std::vector<std::vector<double>> end_f_, end_i_;  ///< [rank][microbatch], kNever until placed
  std::vector<ActionList> pipeline_;
};

}  // namespace

std::vector<ActionList> zb_greedy(const Layout& layout, int memory_limit, const PassTimes& times) {
  return Greedy(layout, std::max(memory_limit, 1), times).run();
}

std::vector<ActionList> zb_1p(const Layout& layout, const PassTimes& times) {
  return zb_greedy(layout, layout.pp, times);
}

std::vector<ActionList> zb_2p(const Layout& layout, const PassTimes& times) {
  return zb_greedy(layout, 2 * layout.pp, times);
}

}  // namespace dtwin::sched
