// The concurrency curve: how much one rank's compute slows when k ranks of one host compute at
// once, measured with k real processes, as the ranks of a training run are. The simulator shares
// a host's cores by it (sim/platform.hpp).
#pragma once

#include <string>
#include <vector>

#include "models/cost/profile.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin::rt {

/// The pipeline stages rank `rank` of the scenario's layout runs: those s with
/// s mod pp = its pipeline rank (rank / tp / dp), one per virtual stage.
std::vector<int> stages_of_rank(const Scenario& scenario, int rank);

/// One probe process (`dtwin-runtime compute-probe`): builds the stages rank `rank` of
/// `scenario` runs (stages_of_rank) with the intra-op thread count its ranks train with, runs a
/// pass (F then B of each stage) twice and writes "probe ready\n" to stdout. Then, for each
/// line "go SECONDS" on stdin, it runs passes back to back until one ends SECONDS + 0.05 s after
/// the start, so that it stays busy while the other probes measure, and writes
/// "probe PASSES LAST SQUARES DF\n": the passes that ended within SECONDS, when the last of them
/// ended, in seconds since the start, and the LogSquares of their F and B seconds, grouped by
/// stage and kind (on a GPU, where a pass is not split, 0 0). For "wake SECONDS" it runs, for
/// SECONDS, passes each followed by a 1 ms sleep, and writes "probe NAPS LATE\n": the sleeps and
/// the seconds it woke after their ends, summed. Probes 0 and 1 pair over Gloo through the store at
/// 127.0.0.1:`store_port` on their first "send N C" or "recv N": probe 1 sends N pipeline
/// messages (CostModel::boundary_bytes), running a pass after posting each when C is 1, and
/// writes "probe N 0 CPU", CPU the seconds its other threads (Gloo's) ran during the N messages
/// (-1 with more than one intra-op thread, whose workers would count); probe 0 runs its forwards
/// and then receives each, and writes "probe N TOTAL", TOTAL the seconds of the N late receives
/// (receive_late_messages). Returns
/// 0 when stdin closes; throws std::runtime_error for any other line.
int run_compute_probe(const Scenario& scenario, int rank, const std::string& data_dir,
                      int store_port);

/// What the probes measure.
struct ConcurrencyFigures {
  std::vector<double> slowdown;      ///< Profile::concurrency
  std::vector<double> wake_delay;    ///< Profile::wake_delay
  std::vector<double> late_receive;  ///< Profile::late_receive
  std::vector<double> variation;     ///< Profile::concurrency_variation
  double p2p_cpu_s_per_byte = 0;     ///< Profile::p2p_cpu_s_per_byte
};

/// Measures Profile::concurrency for k = 1 ... cluster.ranks_per_device with one probe process
/// per rank of the device (ranks 0 .. k-1), started once: in each of 3 rounds, every pipeline
/// rank's probe alone, then probes 0 .. k-1 at once; a round's slowdown for k is the mean over
/// the k probes of their seconds per pass over their pass alone, and the curve keeps the median
/// round; 1 for k = 1, and [1] without a second rank. Profile::concurrency_variation: the
/// coefficient of variation of one F or B about its mean in a measuring window, its log
/// variance pooled over the windows with k probes busy (the windows alone for k = 1) and the
/// probes; empty without a second rank or on a GPU. Each measurement lasts 8 x the slowest
/// rank's pass in `stages`' F + B, at least 1 s and at most 3 s. Then Profile::wake_delay: probe
/// 0's mean lateness after its 1 ms sleeps ("wake") while probes 1 .. j compute, j = 0 ...
/// ranks_per_device - 1 (empty without a second rank). Then Profile::late_receive: probe 0's
/// mean late receive from probe 1 ("recv"/"send") with j = 0 ... ranks_per_device - 1 other
/// probes computing: probe 1 from j = 1, probes 2 .. j beside it; each point takes 30 to 80
/// messages, about two measuring windows of probe 1's passes. From the same messages, from j = 1,
/// Profile::p2p_cpu_s_per_byte: twice the sending probe's helper CPU per message (both ends'),
/// over the message's bytes, mean over j (0 where not attributable). The probes pair through a
/// store this process hosts on a free port of 127.0.0.1. `probe_command`: the arguments that make
/// this executable (/proc/self/exe) run run_compute_probe on the same scenario; "--rank R
/// --store-port P" is appended. Throws std::runtime_error when a probe cannot start, fails, or
/// writes anything else.
ConcurrencyFigures measure_concurrency(const Scenario& scenario,
                                       const std::vector<StageSeconds>& stages,
                                       const std::vector<std::string>& probe_command);

}  // namespace dtwin::rt
