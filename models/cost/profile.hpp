// A measured profile: the seconds each pipeline stage's compute took on real hardware, and the
// measured point-to-point and all-reduce costs, as named by a scenario's cluster.device.profile.
// The simulator uses it in place of the analytic CostModel; the runtime writes it.
//
// The file is YAML (quantities take units as in scenarios: 12ms, 20us, 2GB/s, 1MB; a plain
// number is in seconds, bytes/s or bytes):
//
//   machine: "host-x gloo cpu"     # free text (optional, default "")
//   threads: 1                     # intra-op threads per rank when measuring (optional, >= 1)
//   concurrency: [1, 1.08, 1.62]   # slowdown with k = 1, 2, ... ranks busy at once (optional)
//   concurrency_variation: [0.02, 0.03, 0.12]   # CV of one F or B with k = 1, 2, ... ranks
//                                  # busy at once (optional)
//   wake_delay: [50us, 0.4ms, 4ms] # a computing rank's wait for a core after a short wait, with
//                                  # j = 0, 1, ... other ranks computing (optional)
//   late_receive: [0.3ms, 2ms]     # a receive posted after its send, right after computing,
//                                  # with j = 0, 1, ... other ranks computing (optional)
//   stages:                        # one per stage, in stage order; seconds per microbatch
//     - {forward_s: 0.012, backward_s: 0.024, input_backward_s: 0.012,
//        weight_backward_s: 0.012, optimizer_s: 0.003}   # optimizer_s: per step
//                                  # optional, tensor parallelism: tp_forward_s, tp_backward_s,
//                                  # the collectives' part of F and of B or I; tp_forward_cpu_s,
//                                  # tp_backward_cpu_s, the CPU their helper threads used;
//                                  # variation: the spread of one pass between steps
//                                  # (StageSeconds::variation)
//   p2p: {latency: 20us, bandwidth: 2GB/s}
//                                  # optional in p2p: concurrency: [1, 1.9], the slowdown of one
//                                  # transfer with k = 1, 2, ... transfers at once on one host;
//                                  # cpu_per_byte: 2.5e-9, CPU seconds per byte of a pipeline
//                                  # message, both ends' helper threads together
//   inter_host: {latency: 200us, bandwidth: 12.5MB/s}   # optional: measured between hosts
//                                  # optional in inter_host: queue_delay: 4ms, the wait of a
//                                  # small message behind a pipeline message sent just before it
//   host_op: {grad: 6us, no_grad: 4us}   # optional: host seconds per dispatched operator,
//                                  # with and without autograd recording (HostOpSeconds)
//   gemms:                         # optional: GEMMs at the model's shapes, one per pass and
//     - {name: "qkv", m: 256, n: 864, k: 288, seconds: 2.1ms}   # operator
//     (models/cost/gemm_fit.hpp)
//   allreduce:
//     ranks: 2                     # size of the group the points were measured over
//     across_hosts: false          # optional: the group spanned hosts (else one host's loopback)
//     points:                      # strictly increasing bytes; may be empty (not measured)
//       - {bytes: 1MB, seconds: 0.001}
//     allgather:                   # optional: ZeRO's parameter all-gather over the same group,
//       - {bytes: 1MB, seconds: 0.0006}  # bytes = the whole gathered size
//     reduce_scatter:              # optional: ZeRO's gradient reduce-scatter, bytes = the whole
//       - {bytes: 1MB, seconds: 0.0009}
//
// Every key of a stage, of p2p and of allreduce is required; every number is >= 0, the
// bandwidth > 0; there is at least one stage; unknown and duplicate keys are errors.
#pragma once

#include <string>
#include <vector>

#include "base/config_error.hpp"
#include "models/spec/scenario.hpp"

namespace dtwin {

/// Measured seconds of one stage's compute: per microbatch, except `optimizer` (per step).
struct StageSeconds {
  double forward = 0;
  double backward = 0;         ///< the fused backward B
  double input_backward = 0;   ///< I, backward with respect to the inputs
  double weight_backward = 0;  ///< W, backward with respect to the weights
  double optimizer = 0;        ///< one rank's optimizer step (over its 1/dp shard under ZeRO)
  /// With tensor parallelism, the part of `forward` and of a backward (B or I) that a member
  /// spent in its group's collectives (waiting included); 0 without.
  double tp_forward = 0;
  double tp_backward = 0;
  /// CPU seconds the member's other threads ran during those collectives of one F and of one B
  /// or I (nn::TensorParallelGroup::collective_helper_cpu_seconds: Gloo's worker and I/O
  /// threads copying, reducing and moving the bytes), part of tp_forward and tp_backward's
  /// time: work on the host's cores that the ranks sharing them lack meanwhile. 0: not measured
  /// (no tensor parallelism, a GPU, or several intra-op threads, whose own work would count).
  double tp_forward_cpu = 0;
  double tp_backward_cpu = 0;
  /// Coefficient of variation (standard deviation / mean, dimensionless) of one F, B, I or W of
  /// this stage between steps, beyond what all the actions of a step share (the machine's speed
  /// over a step): the independent spread that makes a step of varying actions longer on
  /// average than the step of their mean seconds wherever one action waits for the later of two.
  /// 0: not measured (the simulator then times every step alike).
  double variation = 0;
  /// Seconds the stage's data-parallel gradient synchronisation works on its rank's core beside
  /// the collective, once per step: packing the gradients into one buffer and writing their
  /// average back (ALLREDUCE), or scaling the reduced shard and releasing the full gradient
  /// buffer (ZeRO's REDUCE_GRAD). 0 without data parallelism, with gradient buckets, or not
  /// measured.
  double sync_local = 0;
  bool operator==(const StageSeconds&) const = default;
};

/// One measured all-reduce: its size in bytes and the seconds it took.
struct AllReducePoint {
  double bytes = 0;
  double seconds = 0;
  bool operator==(const AllReducePoint&) const = default;
};

/// One measured GEMM C[m×n] = A[m×k]·B[k×n] at the profile's training precision: the operator
/// of the model it stands for (layer_ops' name, e.g. "qkv dgrad") and its median seconds.
struct GemmPoint {
  std::string name;
  double m = 0, n = 0, k = 0;
  double seconds = 0;
  bool operator==(const GemmPoint&) const = default;
};

struct Profile {
  std::string source;   ///< the file it was read from ("" if built in memory)
  std::string machine;  ///< free text, e.g. hostname + backend
  int threads = 1;      ///< intra-op threads per rank used when measuring
  /// Slowdown of one rank's compute when k ranks of one host compute at once, k = 1, 2, ...:
  /// concurrency[k-1] = seconds of an action with k ranks busy / seconds with it alone, measured
  /// with k real processes (time-slicing of the cores, shared caches and memory bandwidth).
  /// Empty: not measured, and the simulator shares the host's cores fairly.
  std::vector<double> concurrency;
  /// Coefficient of variation (dimensionless) of one F or B of a rank about its mean over a
  /// second or so while k = 1, 2, ... ranks of its host compute at once:
  /// concurrency_variation[k-1], measured with the processes of `concurrency`. Time-slicing spreads
  /// the passes of ranks sharing cores (a rank left alone on a core for a while runs at its own
  /// speed, the others slower): a spread the fair sharing of the simulator's cores lacks. Empty:
  /// not measured.
  std::vector<double> concurrency_variation;
  /// Mean seconds a rank that computes waits for a core when it wakes from a short wait (1 ms),
  /// while j = 0, 1, ... other processes of its host compute: wake_delay[j]. Measured with
  /// processes (the scheduler holds back a thread that used more than its share of the
  /// cores). Empty: not measured.
  std::vector<double> wake_delay;
  /// Mean seconds from posting to completion of a point-to-point receive of one pipeline
  /// message that a rank posts right after computing, when its peer had already posted the send
  /// (Gloo sends only once the receiver is ready, so the sender's and the receiver's progress
  /// threads both need a core), while j = 0, 1, ... other processes of its host compute (from
  /// j = 1 the sender among them): late_receive[j]. Measured with two processes and a Gloo pair.
  /// Empty: not measured.
  std::vector<double> late_receive;
  std::vector<StageSeconds> stages;  ///< one per stage, in stage order
  /// The slowdown (dimensionless, > 0; the concurrency curve's ratio) that the stages' compute was
  /// divided by: the profile's members that the simulator runs as ranks of their own (expert- or
  /// context-parallel) computed at once while timed, and the simulator applies their sharing of the
  /// cores itself. 1: none.
  double members_concurrency = 1;
  /// Processes of the profile's group that computed at once on this host's cores while its
  /// stages were timed, when they outnumbered the cores (cp2-tp2: 4 on 2): the stages' seconds
  /// are then walls that carry their sharing of the cores, in the compute and in the collectives'
  /// waits (a member waits there while its partner waits for a core), and the simulator slows a
  /// rank only while more processes than these compute on its host. 1: the figures are one
  /// schedule rank's (members_concurrency took the others' sharing out).
  int processes_sharing_cores = 1;
  double p2p_latency = 0;    ///< seconds
  double p2p_bandwidth = 0;  ///< bytes/s
  /// Slowdown of one point-to-point transfer between two ranks of one host (a pipeline message
  /// of p2p's size) while k = 1, 2, ... such transfers run at once between k pairs of its ranks:
  /// p2p_concurrency[k-1] = seconds with k / seconds alone. Empty: not measured, and the
  /// simulator shares one p2p_bandwidth among them.
  std::vector<double> p2p_concurrency;
  /// CPU seconds per byte of a pipeline message that the two ends' helper threads together run
  /// on their hosts' cores (Gloo's progress threads copying through the sockets), measured with
  /// the late receive's pair of processes while they compute between messages, as pipeline
  /// ranks do. 0: not measured. Reported, not simulated: under SCHED_BATCH (the runtime's
  /// policy) these threads do not preempt a pass; training's passes do not wait for them (95-97%
  /// of pp2-interleaved's waited under 5% of their CPU for a core), and charging them beside
  /// the passes put the pipelines' steps long (README, "Prediction benchmark", runs BD-BF).
  double p2p_cpu_s_per_byte = 0;
  /// Measured between the hosts of a multi-host launch (median over host pairs): one-way
  /// seconds of a small message and bytes/s of a large one; 0 when not measured.
  double inter_host_latency = 0;
  double inter_host_bandwidth = 0;
  /// Seconds a small message between hosts waits, beyond inter_host_latency, when a pipeline
  /// message (the stage boundary's bytes) left just before it in the same direction: the
  /// queue that message builds in the link's buffers (a shaper's or a switch's FIFO), which
  /// max-min bandwidth sharing does not have. Gloo's ready message of a rendezvous waits there
  /// when the receiving rank has just started a send to the same host. 0: not measured.
  double inter_host_queue_delay = 0;
  std::vector<AllReducePoint> allreduce;  ///< strictly increasing bytes
  std::vector<GemmPoint> gemms;           ///< empty when not measured
  /// Host seconds the runtime's thread spends dispatching one operator to the rank's device
  /// (LibTorch's C++ dispatcher, a kernel launch on a GPU), with autograd recording it and
  /// without: the device description's host_op_overhead and host_op_overhead_no_grad for this
  /// machine (the host-bound model, models/cost/layer_host_stall.hpp). 0: not measured.
  double host_op_seconds = 0;
  double host_op_seconds_no_grad = 0;
  /// ZeRO's collectives over the same group, bytes = the whole (unsharded) size: the parameter
  /// all-gather and the gradient reduce-scatter; empty when not measured.
  std::vector<AllReducePoint> allgather, reduce_scatter;
  int allreduce_ranks = 0;              ///< the group size the points were measured over
  bool allreduce_across_hosts = false;  ///< the group spanned hosts, one rank per host

  /// Seconds for an all-reduce of `bytes` over `allreduce_ranks` ranks: linear interpolation
  /// between the two points around `bytes`; outside the measured range, the line through the
  /// first (below) or last (above) two points. Never negative (a line extrapolated below the
  /// first point is clamped at 0). One point: the line through the origin and that point (pure
  /// bandwidth). No point: 0.
  double allreduce_seconds(double bytes) const;

  /// Seconds per byte that a ring all-reduce step costs beyond moving the bytes over the link:
  /// what Gloo does on the CPU (copies between user and socket buffers, the reduction
  /// arithmetic at memory bandwidth, TCP overheads). Fitted at the largest measured point S over
  /// n = allreduce_ranks: the ring (Patarasuk & Yuan 2009) takes 2(n-1) steps in which every
  /// rank sends S/n. With all n ranks on one host the n flows of a step share its loopback link,
  /// so the link's part is 2(n-1)(p2p_latency + S/p2p_bandwidth); across hosts each flow has
  /// its host's link, 2(n-1)(inter_host_latency + S/(n·inter_host_bandwidth)). The rest of
  /// seconds(S), divided by the 2(n-1)·S/n bytes a rank sends, never negative; 0 without points
  /// or the link's figures.
  double allreduce_overhead_s_per_byte() const;

  /// As allreduce_overhead_s_per_byte for a ring all-gather or reduce-scatter measured as
  /// `points` (allgather or reduce_scatter) over allreduce_ranks: n-1 steps of S/n (Thakur et al.
  /// 2005), so the link's part is (n-1)(p2p_latency + S/p2p_bandwidth) on one host and
  /// (n-1)(inter_host_latency + S/(n·inter_host_bandwidth)) across hosts, and the rest is divided
  /// by the (n-1)·S/n bytes a rank sends. Falls back to allreduce_overhead_s_per_byte() when
  /// `points` is empty.
  double half_ring_overhead_s_per_byte(const std::vector<AllReducePoint>& points) const;

  /// Slowdown of each of `n` >= 1 ranks computing at once on one host: concurrency[n-1], and
  /// beyond the K measured points concurrency[K-1] * n / K (the K ranks' throughput time-sliced
  /// among n). Throws std::logic_error when concurrency is empty.
  double concurrency_slowdown(int n) const;
  /// As concurrency_slowdown for `n` >= 1 transfers at once on one host's loopback, from
  /// p2p_concurrency. Throws std::logic_error when p2p_concurrency is empty.
  double p2p_concurrency_slowdown(int n) const;

  /// The log variance, ln(1 + v^2), of concurrency_variation's v for `n` >= 1 ranks computing at
  /// once (its last point beyond the curve); 0 without the curve.
  double concurrency_log_variance(int n) const;

  /// Seconds a rank resuming after a wait spends beyond the wait while `busy` >= 0 other ranks
  /// of its host compute: wake_delay[busy] - wake_delay[0] (the last point beyond the curve),
  /// never negative; 0 without the curve.
  double resume_delay(int busy) const;

  /// Seconds a late receive (see late_receive) takes from its posting while `busy` >= 0 other
  /// ranks of its host compute: late_receive[busy] (the last point beyond the curve); 0 without
  /// the curve.
  double late_receive_seconds(int busy) const;

  /// Equal measurements: every field but `source`.
  bool operator==(const Profile& other) const;

 private:
  /// The fit both figures above share: a ring of steps_per_rank·(n-1) steps of S/n over
  /// n = allreduce_ranks, at the largest of `points`.
  double ring_overhead_s_per_byte(const std::vector<AllReducePoint>& points,
                                  int steps_per_rank) const;
};

/// Reads the profile at `path` (Profile::source = path). Throws ConfigError with a one-line
/// message "FILE:LINE:COL: KEY: expected WHAT, got 'VALUE'" (as load_scenario does) for any bad
/// key, type, unit or range, "FILE: cannot open profile file" or "FILE:LINE:COL: invalid YAML".
Profile load_profile(const std::string& path);

/// Writes `profile` as YAML to `path` so that load_profile(path) == profile (numbers are written
/// in their shortest exact form, in base units). Throws ConfigError if the file cannot be written.
void save_profile(const Profile& profile, const std::string& path);

/// Throws ConfigError "PROFILE_FILE: stages: expected N stages (layout.pp *
/// layout.virtual_stages of SCENARIO_FILE), got 'M'" unless the profile has one entry per
/// pipeline stage of `scenario`.
void check_profile_matches(const Profile& profile, const Scenario& scenario);

}  // namespace dtwin
