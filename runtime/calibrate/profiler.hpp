// `dtwin profile`: measure on this machine what the simulator needs.
#pragma once

#include <string>
#include <vector>

#include "models/cost/cost_model.hpp"
#include "models/cost/profile.hpp"
#include "models/spec/scenario.hpp"
#include "schedules/schedule.hpp"

namespace dtwin::rt {

/// How `dtwin profile` measures: where its token batches come from and how often it repeats.
struct ProfileOptions {
  std::string data_dir = "data";  ///< for real token batches (stage 0 input, last-stage targets)
  int warmup = 3;                 ///< untimed repetitions before measuring
  int repeats = 15;               ///< timed repetitions; the median is kept
  /// Arguments that make this executable run `compute-probe` on the same scenario (see
  /// concurrency_probe.hpp); empty: the concurrency curve is not measured.
  std::vector<std::string> probe_command;
  /// With layout.tp > 1 (required then): the arguments that make this executable run
  /// run_profile_member on the same scenario and options; "--member I --store-port P" is
  /// appended.
  std::vector<std::string> member_command;
  /// The scenario's schedule (lowered); when set, each stage's F, B, I, W and optimizer seconds
  /// are those of its actions replayed in the schedule's order (replay_compute) where the
  /// schedule has that kind, else of the stage timed alone.
  const sched::Schedule* schedule = nullptr;
  /// Processes that compute beside this one on this machine's cores in training while the
  /// scenario places them on nodes of their own (network namespaces or containers of one machine
  /// standing for hosts: LOCAL_WORLD_SIZE beyond the scenario's ranks per node). That many
  /// BusyProcesses spin while the stages are timed, so that their seconds carry the sharing
  /// (Profile::processes_sharing_cores = 1 + co_tenants); 0: none.
  int co_tenants = 0;
};

/// Measures, with the thread count each rank will train with (runtime.threads, or the cores
/// shared by the scenario's world size), the seconds of F, B, I, W and the optimizer step of
/// every stage at the scenario's micro-batch size, gradients accumulating over
/// layout.microbatches microbatches per step as in training (with options.schedule, the means
/// of its actions replayed in the schedule's order; kinds it lacks, and without it, medians
/// timed alone); the point-to-point latency and
/// bandwidth of Gloo between two ranks over loopback sockets; the seconds of the model's GEMMs
/// (model_gemms, measure_gemms) at the training precision on the rank's device; and all-reduce
/// seconds against message size over a Gloo group of layout.dp ranks (none when dp = 1); and, with
/// a probe command, the concurrency curve (Profile::concurrency) measured by running k = 1 ...
/// cluster.ranks_per_device processes' F and B at once. With layout.tp > 1 each stage is timed
/// as member 0 of a tensor-parallel group whose other members are processes started with
/// options.member_command; throws std::invalid_argument when it is empty.
Profile measure_profile(const Scenario& scenario, const ProfileOptions& options);

/// One member (1 .. layout.tp - 1) of the profile's tensor-parallel group (`dtwin-runtime
/// profile-member`): joins the group through the store at 127.0.0.1:`store_port`, which
/// measure_profile's process (member 0) hosts, and runs the same stage measurements with its
/// shards, so that member 0's collectives have their peers. Returns 0; throws what the
/// rendezvous or a collective throws (member 0 gone).
int run_profile_member(const Scenario& scenario, int member, int store_port,
                       const ProfileOptions& options);

/// The message sizes, in bytes, at which the profile measures all-reduces: 4 KiB, then x8 while
/// below stage 0's gradient bytes, and those.
std::vector<double> allreduce_sizes(const CostModel& cost);

/// Where the profile of `scenario` on this machine is cached: CACHE/profiles/<name>-<key>.yaml,
/// CACHE being $DTWIN_CACHE_DIR, else .cache in the working folder; the
/// key a hash of the host name, core count, model, stage split, micro-batch size and count,
/// attention kernel, precision, backend, thread count, dp, world size, ranks per device (the
/// concurrency curve's length), tp, ZeRO stage, recomputation and pipeline schedule (the
/// replay's order), key/value heads, ep and the mixture of experts' sizes, routing and capacity,
/// so that a change to any of them re-measures.
std::string profile_cache_path(const Scenario& scenario);

}  // namespace dtwin::rt
