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

/// ZB-V (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory", §3; the order of
/// PyTorch's ScheduleZBVZeroBubble): two chunks per rank in V placement (StagePlacement::VShape),
/// backwards split into I and W as in ZB-H1. Rank r warms up with 2(pp-r)-1 chunk-0 forwards,
/// then r pairs F1 F0 and pp-r triples F1 I1 W1; the steady state repeats F0 I0 W0 F1 I1 W1; the
/// cool-down runs r pairs I0 I1 and pp-r pairs I0 W0, then the deferred W of chunk 1 and chunk 0.
/// At most 2pp chunk-microbatches in flight (rank 0), the activations of pp microbatches through
/// a whole rank's layers, as 1F1B. The phases assume m >= 2pp-1; with fewer microbatches the
/// actions of the missing ones are left out, as PyTorch does.
std::vector<ActionList> zb_v(const Layout& layout);

/// DualPipe-V (DeepSeek-V3 report §3.2.1's DualPipe "cut in half": deepseek-ai/DualPipe,
/// dualpipev.py, and PyTorch's ScheduleDualPipeV): V placement, one direction of microbatches,
/// in DualPipeV's eight steps. Its F&B slots overlap the forward of one chunk with the backward
/// (B, whole) of the other; the IR has no concurrency, so a slot is the F followed by the B. Some
/// backwards are split into I and a W that a first-in, first-out queue runs later, as DualPipe's
/// WeightGradStore. Needs m >= 2pp (its main step runs m - 2pp + r + 1 times on rank r).
std::vector<ActionList> dualpipe_v(const Layout& layout);

/// What the generator of a schedule kind needs of a layout, and where it places the stages.
struct Requirements {
  int virtual_stages = 1;                 ///< chunks per rank it needs; 0: any (interleaved 1F1B)
  bool microbatches_pp_multiple = false;  ///< m must be a multiple of pp
  int min_microbatches_per_pp = 0;        ///< m must be at least this times pp
  StagePlacement placement = StagePlacement::Interleaved;

  /// virtual_stages, or `any` where the kind takes any number.
  int chunks(int any) const { return virtual_stages == 0 ? any : virtual_stages; }
};

Requirements requirements(ScheduleKind kind);

/// Runs the generator of `kind` and replicates its pipeline over the dp replicas; the schedule's
/// name is the kind's name and its layout's placement the kind's. Throws std::invalid_argument (a
/// std::logic_error: the scenario loader refuses such layouts first) for a layout the generator
/// cannot serve (non-positive sizes, or one that misses the kind's requirements()). `times` orders
/// the zero-bubble heuristics' passes (ZB-1p, ZB-2p); the other generators do not depend on times.
Schedule generate(ScheduleKind kind, const Layout& layout, const PassTimes& times = {});

}  // namespace dtwin::sched
