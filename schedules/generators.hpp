// Compute-only schedule generators. Each emits the action lists of one pipeline (one list per
// pipeline rank, F/B/I/W only); generate() checks the layout and replicates the pipeline dp times.
#pragma once

#include <vector>

#include "schedules/schedule.hpp"

namespace dtwin::sched {

/// GPipe (Huang et al. 2019): every forward, then every backward, both in microbatch order.
std::vector<ActionList> gpipe(const Layout& layout);

/// 1F1B as in PipeDream-flush / DAPPLE (Narayanan et al. 2021 §2.2.1): pp-rank-1 warm-up
/// forwards, then one forward and one backward alternately, then the remaining backwards.
std::vector<ActionList> one_f_one_b(const Layout& layout);

/// Megatron-LM's interleaved 1F1B (Narayanan et al. 2021 §2.2.2) with v = virtual_stages chunks
/// per rank; rank r holds stages r, r+pp, ...; microbatches advance in groups of pp; warm-up is
/// (pp-rank-1)*2 + (v-1)*pp virtual steps, capped at v*m. Requires m to be a multiple of pp.
std::vector<ActionList> interleaved_1f1b(const Layout& layout);

/// ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", §3): 1F1B with each backward split
/// into I (input gradient, on the critical path) and W (weight gradient); pipeline rank r defers
/// its first r W passes to the cool-down, where they fill the bubble, keeping at most pp
/// microbatches of activations in flight, as 1F1B does on rank 0.
std::vector<ActionList> zb_h1(const Layout& layout);

/// Pass durations for zb_greedy, in any one unit; all positive.
struct PassTimes {
  double f = 1;     ///< forward
  double i = 1;     ///< input gradient (the paper's B)
  double w = 1;     ///< weight gradient
  double comm = 0;  ///< one activation or gradient transfer between neighbouring ranks
};

/// The greedy scheduler of Qi et al. 2024 ("Zero Bubble Pipeline Parallelism", §3.1, without
/// its ILP refinement), run as a list scheduler over simulated time: a free rank runs an I whose
/// gradient has arrived or an F whose input has (both ready: alternating, as 1F1B), so the
/// warm-up does as many F as the memory allows before the first I; otherwise it runs a W if the
/// gap before its next F or I fits one, or if idling would make its idle time the pipeline's
/// largest, else it waits. F, I and W each run in microbatch order. At most `memory_limit`
/// microbatches are in flight (F run, W not yet) on any rank; a W frees one.
std::vector<ActionList> zb_greedy(const Layout& layout, int memory_limit, const PassTimes& times);

/// ZB-1p (Qi et al. 2024 §3–4): zb_greedy under 1F1B's peak activation memory, pp microbatches,
/// with `times` (the default, unit times F = I = W = 1 and communication 0, is the dry run's and
/// the paper's T_F = T_B = T_W of §2; the paper schedules with profiled times).
std::vector<ActionList> zb_1p(const Layout& layout, const PassTimes& times = {});

/// ZB-2p (Qi et al. 2024 §3–4): zb_greedy with twice that memory, 2·pp microbatches.
std::vector<ActionList> zb_2p(const Layout& layout, const PassTimes& times = {});

/// Runs the generator of `kind` and replicates its pipeline over the dp replicas; the schedule's
/// name is the kind's name. Throws std::invalid_argument (a std::logic_error: the scenario loader
/// refuses such layouts first) for a layout the generator cannot serve (non-positive sizes,
/// virtual_stages != 1 for a non-interleaved schedule, m not a multiple of pp for interleaved
/// 1F1B). `times` orders the zero-bubble heuristics' passes (ZB-1p, ZB-2p); the other
/// generators do not depend on times.
Schedule generate(ScheduleKind kind, const Layout& layout, const PassTimes& times = {});

}  // namespace dtwin::sched
