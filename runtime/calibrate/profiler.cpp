#include "runtime/calibrate/profiler.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

#include <unistd.h>
#include <cstdlib>

#include <algorithm>
#include <cmath>
#include <functional>
#include <thread>

#include "models/cost/cost_model.hpp"
#include "models/cost/gemm_fit.hpp"
#include "models/cost/rank_sharing.hpp"
#include "runtime/calibrate/busy_processes.hpp"
#include "runtime/calibrate/comm_benchmark.hpp"
#include "runtime/calibrate/compute_replay.hpp"
#include "runtime/calibrate/concurrency_probe.hpp"
#include "runtime/calibrate/gemm_benchmark.hpp"
#include "runtime/calibrate/host_op_timing.hpp"
#include "runtime/calibrate/sample_statistics.hpp"
#include "runtime/calibrate/stage_run.hpp"
#include "runtime/calibrate/step_variation.hpp"
#include "runtime/clock.hpp"
#include "runtime/data/open_training_data.hpp"
#include "runtime/fused_adamw.hpp"
#include "runtime/process_groups.hpp"
#include "runtime/rank_device.hpp"
#include "runtime/spawn_self.hpp"
#include "runtime/threads.hpp"

namespace dtwin::rt {
namespace {

constexpr double kMemberTimeout = 120;  // s a profile member waits for the others

// A profile process's groups: the tensor-parallel group (layout.tp > 1) and the
// context-parallel group (layout.cp > 1), or the expert-parallel group (layout.ep > 1, the
// runtime's MoE having tp 1 and cp 1), whose members compute together; each stage's
// expert-parallel all-to-alls and context-parallel ring waits count into the tensor-parallel
// group's collective counters (StageModule shares them), so tp.collective_seconds() is the
// passes' inner communication.
struct PassGroups {
  nn::TensorParallelGroup tp;
  nn::ExpertParallelGroup ep;
  nn::ContextParallelGroup cp;
  /// Every member of the profile (null alone), this process's index among them (tp innermost,
  /// then cp), and their number.
  c10::intrusive_ptr<c10d::Backend> all;
  int member = 0;
  int size = 1;
};

// Times F, B, I, W and the optimizer step of one stage, one microbatch at a time, and the
// tensor-parallel collectives inside F and B (as member `tp` of its group). As in training, the
// gradients accumulate over layout.microbatches microbatches before the optimizer step and
// zero_grad, which zeroes them as the executor's does.
StageSeconds measure_stage(const Scenario& scenario, const CostModel& cost, int s,
                           const TrainingData& data, const ProfileOptions& options,
                           const PassGroups& groups, const torch::Device& device) {
  const nn::TensorParallelGroup& tp = groups.tp;
  StageRun run(scenario, cost.stage(s), data, tp, device, groups.ep, groups.cp);
  const auto timed = [&](const std::function<void()>& body) {
    return device_seconds(device, body);
  };
  FusedAdamW optimizer(run.module->parameters(),
                       torch::optim::AdamWOptions(scenario.training.lr).weight_decay(0.1));
  const auto optimizer_step = [&] {
    return timed([&] {
      optimizer.step();
      optimizer.zero_grad(/*set_to_none=*/false);
    });
  };
  const int microbatches = scenario.layout.microbatches;
  std::vector<double> f, b, in, w, opt, tp_f, tp_b;
  for (int i = -options.warmup; i < options.repeats; ++i) {
    torch::Tensor out;
    const double tp_start = tp.collective_seconds();
    const double forward = timed([&] { out = run.forward(); });
    const double tp_forward_end = tp.collective_seconds();
    const double backward = timed([&] { run.backward(out); });
    const double tp_backward_end = tp.collective_seconds();
    out = run.forward();
    nn::WeightGradStash stash;
    const double input_backward = timed([&] {
      nn::StashGuard guard(run.module->stash_slot(), &stash);
      run.backward(out);
    });
    const double weight_backward = timed([&] { stash.apply(); });
    const bool step_ends = (i + options.warmup + 1) % microbatches == 0;
    const double step = step_ends ? optimizer_step() : 0;
    if (i < 0) continue;
    f.push_back(forward);
    b.push_back(backward);
    tp_f.push_back(tp_forward_end - tp_start);
    tp_b.push_back(tp_backward_end - tp_forward_end);
    in.push_back(input_backward);
    w.push_back(weight_backward);
    if (step_ends) opt.push_back(step);
  }
  if (opt.empty()) opt.push_back(optimizer_step());
  return {median(f), median(b), median(in), median(w), median(opt), median(tp_f), median(tp_b)};
}

// Sets the stages' tp_forward_cpu and tp_backward_cpu: the means of the CPU that the group's
// collectives' helper threads ran per F and per B or I, the actions of pipeline rank `p`
// replayed `steps` times more in the schedule's order while the host's other
// cluster.ranks_per_device - tp ranks are busy (BusyProcesses, started by member 0). In training
// they compute beside the group and the cores never idle; beside idle cores Gloo's threads used
// about twice the CPU (tp2's F: 14.5 ms alone, 7.3 ms with 6 busy processes). Only on the CPU
// with one intra-op thread, where the process's other threads are the collectives' alone.
void measure_collective_cpu(const Scenario& scenario, const CostModel& cost,
                            const sched::Schedule& schedule, const TrainingData& data, int p,
                            int steps, const PassGroups& groups, const torch::Device& device,
                            std::vector<StageSeconds>& stages) {
  const nn::TensorParallelGroup& tp = groups.tp;
  if (tp.size == 1 || !device.is_cpu() || at::get_num_threads() != 1) return;
  CollectiveTimes collectives;
  {
    const int others_busy = std::max(0, scenario.cluster.ranks_per_device - groups.size);
    const BusyProcesses others(groups.member == 0 ? others_busy : 0);
    replay_compute(scenario, cost, schedule, schedule.layout.group(0, p), data, 1, steps, tp,
                   &collectives, device, groups.ep, groups.cp);
  }
  for (const auto& [action, cpu] : collectives.helper_cpu) {
    StageSeconds& stage = stages.at(action.first);
    if (action.second == sched::ActionKind::F) stage.tp_forward_cpu = mean(cpu);
    if (action.second == sched::ActionKind::B || action.second == sched::ActionKind::I)
      stage.tp_backward_cpu = mean(cpu);
  }
}

// Steps of the schedule-order replay of pipeline rank `p`: enough for about options.repeats
// microbatches of each kind and, by the `stages`' figures timed alone, for kMinReplaySeconds,
// at most kMaxReplayFactor times the first. The machine's speed drifts in phases of seconds: a
// replay of 3 s (tp2's four steps) gave tp2's F 44–62 ms of collectives in three profiles
// minutes apart, against 41–46 ms over training's 22 s. The members of a tensor-parallel group
// replay the largest count of theirs, so that their collectives pair up (and so do an
// expert-parallel group's).
int replay_steps(const sched::Schedule& schedule, int p, const std::vector<StageSeconds>& stages,
                 const ProfileOptions& options, const PassGroups& groups) {
  constexpr double kMinReplaySeconds = 10;
  constexpr int kMaxReplayFactor = 4;
  const int microbatches = schedule.layout.microbatches;
  const int fewest = std::max(2, (options.repeats + microbatches - 1) / microbatches);
  double step_seconds = 0;  // one step of the rank's compute, timed alone
  for (const sched::Action& a : schedule.ranks.at(schedule.layout.group(0, p))) {
    if (!sched::is_compute(a.kind) && a.kind != sched::ActionKind::OPTIM) continue;
    const StageSeconds& s = stages.at(a.stage);
    step_seconds += sched::of_kind(a.kind, s.forward, s.backward, s.input_backward,
                                   s.weight_backward, s.optimizer);
  }
  const double wanted = step_seconds > 0 ? std::ceil(kMinReplaySeconds / step_seconds) : fewest;
  torch::Tensor steps = torch::tensor(
      {static_cast<int64_t>(std::clamp<double>(wanted, fewest, kMaxReplayFactor * fewest))});
  if (groups.size > 1) {
    std::vector<torch::Tensor> buffers{steps};
    c10d::AllreduceOptions largest;
    largest.reduceOp = c10d::ReduceOp::MAX;
    groups.all->allreduce(buffers, largest)->wait();
  }
  return static_cast<int>(steps.item<int64_t>());
}

// Replaces the stages' figures (with their collectives' parts) by the means of their actions
// replayed in the schedule's order on the first replica's pipeline ranks, for the kinds the
// schedule runs: replay_steps steps, after one untimed step. Means, not medians: the simulator
// predicts the mean step and draws each action about its figure with a factor of mean 1, and
// the right tail that a median leaves out (a page fault, a preemption, the other processes)
// recurs in training. Replayed F and B run 0.2-4.1% above their medians (quickstart, dp2 and
// pp2-interleaved), dp2's ALLREDUCE 10.7%, and training's actions 0.4-6.4% above theirs. Sets
// each stage's variation from the same steps (step_variation of their compute, the
// collectives' seconds taken out), and the CPU of the collectives' helper threads
// (measure_collective_cpu).
void measure_in_schedule_order(const Scenario& scenario, const CostModel& cost,
                               const sched::Schedule& schedule, const TrainingData& data,
                               const ProfileOptions& options, const PassGroups& groups,
                               const torch::Device& device, std::vector<StageSeconds>& stages) {
  const nn::TensorParallelGroup& tp = groups.tp;
  for (int p = 0; p < schedule.layout.pp; ++p) {
    const int steps = replay_steps(schedule, p, stages, options, groups);
    CollectiveTimes collectives;
    ActionSeconds replayed =
        replay_compute(scenario, cost, schedule, schedule.layout.group(0, p), data, 1, steps, tp,
                       &collectives, device, groups.ep, groups.cp);
    for (const auto& [action, seconds] : replayed) {
      StageSeconds& stage = stages.at(action.first);
      const double value = mean(seconds);
      switch (action.second) {
        case sched::ActionKind::F:
          stage.forward = value;
          stage.tp_forward = mean(collectives.seconds.at(action));
          break;
        case sched::ActionKind::B:
          stage.backward = value;
          stage.tp_backward = mean(collectives.seconds.at(action));
          break;
        case sched::ActionKind::I:
          stage.input_backward = value;
          stage.tp_backward = mean(collectives.seconds.at(action));
          break;
        case sched::ActionKind::W:
          stage.weight_backward = value;
          break;
        case sched::ActionKind::ALLREDUCE:
        case sched::ActionKind::REDUCE_GRAD:
          stage.sync_local = value;
          break;
        default:
          stage.optimizer = value;  // OPTIM, the one other kind replayed
      }
    }
    // The variation of the compute alone: the simulator scales a pass less its measured
    // collectives, whose waits vary with the other members.
    ActionSeconds compute = replayed;
    for (auto& [action, seconds] : compute)
      for (std::size_t i = 0; i < seconds.size(); ++i)
        seconds[i] -= collectives.seconds.at(action)[i];
    for (const auto& [stage, variation] : step_variation(compute, steps))
      stages.at(stage).variation = variation;
    measure_collective_cpu(scenario, cost, schedule, data, p, steps, groups, device, stages);
  }
}

// Every stage's compute seconds as a member of `groups` (size 1: alone): timed alone, then in
// the schedule's order (options.schedule). Every member runs the same passes, so their
// collectives pair up.
std::vector<StageSeconds> measure_stages(const Scenario& scenario, const CostModel& cost,
                                         const TrainingData& data, const ProfileOptions& options,
                                         const PassGroups& groups) {
  // On runtime.device cuda, the GPU that the member takes in training, as local rank
  // member() of size().
  RankEnv member;
  member.local_rank = groups.member;
  member.local_world_size = groups.size;
  const torch::Device device = rank_device(scenario.runtime, member);
  std::vector<StageSeconds> stages;
  for (int s = 0; s < cost.num_stages(); ++s)
    stages.push_back(measure_stage(scenario, cost, s, data, options, groups, device));
  if (options.schedule)
    measure_in_schedule_order(scenario, cost, *options.schedule, data, options, groups, device,
                              stages);
  return stages;
}

// Member `member` of the profile's group of profile_members processes, which rendezvous
// through `store`.
PassGroups profile_group(const Scenario& scenario, const c10::intrusive_ptr<c10d::Store>& store,
                         int member) {
  const LayoutSpec& l = scenario.layout;
  // On a GPU, Gloo through host copies (the members share this host's GPUs).
  const bool on_gpu = scenario.runtime.device == RuntimeDevice::Cuda;
  const GlooBinding bind{"127.0.0.1", {}, on_gpu};
  const auto make = [&](const std::string& name, int rank, int size) {
    return make_group(Backend::Gloo, store, name, rank, size, kMemberTimeout, bind);
  };
  PassGroups groups;
  groups.size = profile_members(scenario);
  groups.member = member;
  groups.all = make("profile-members", member, groups.size);
  if (l.tp * l.cp == 1) {
    groups.ep = {groups.all, member, l.ep};
    return groups;
  }
  // Members numbered as in training: tp innermost, then cp.
  const int tp_index = member % l.tp, cp_index = member / l.tp;
  const auto subgroup = [&](const std::string& name, int index, int rank, int size) {
    return size == groups.size ? groups.all : make(name + std::to_string(index), rank, size);
  };
  if (l.tp > 1)
    groups.tp = {{subgroup("profile-tp/", cp_index, tp_index, l.tp), tp_index, l.tp},
                 l.sequence_parallel};
  if (l.cp > 1) groups.cp = {subgroup("profile-cp/", tp_index, cp_index, l.cp), cp_index, l.cp};
  return groups;
}

// Every stage's compute seconds. With layout.tp > 1 a tensor-parallel group's members compute
// together, as processes (options.member_command starts members 1 .. tp-1, this process is
// member 0): the seconds are member 0's, its shards' compute with the group's collectives
// (Megatron's f and g, or the sequence-parallel gathers and scatters) and the other members
// busy at the same time, as in training. Likewise with layout.ep > 1 (and tp 1) the members of
// an expert-parallel group, each holding its experts, exchanging token copies by all-to-all in
// every MoE layer (each member routes the same batch), and with layout.cp > 1 the
// layout.tp · layout.cp members of a context-parallel group of tensor-parallel groups, each
// holding its tokens and passing keys and values around its ring.
std::vector<StageSeconds> measure_compute(const Scenario& scenario, const CostModel& cost,
                                          const TrainingData& data, const ProfileOptions& options) {
  const int size = profile_members(scenario);
  if (size == 1) return measure_stages(scenario, cost, data, options, {});
  if (options.member_command.empty())
    throw std::invalid_argument(
        "measure_profile: layout.tp, layout.cp or layout.ep > 1 needs "
        "ProfileOptions::member_command");
  const auto store = tcp_store("127.0.0.1", 0, true, kMemberTimeout);
  std::vector<pid_t> members;
  for (int member = 1; member < size; ++member) {
    std::vector<std::string> args = options.member_command;
    args.insert(args.end(), {"--member", std::to_string(member), "--store-port",
                             std::to_string(store->getPort())});
    members.push_back(spawn_self(args, {}, nullptr, "profile member " + std::to_string(member)));
  }
  std::vector<StageSeconds> stages;
  try {
    stages = measure_stages(scenario, cost, data, options, profile_group(scenario, store, 0));
  } catch (...) {
    for (pid_t pid : members) kill(pid, SIGKILL);
    for (pid_t pid : members) waitpid(pid, nullptr, 0);
    throw;
  }
  for (size_t i = 0; i < members.size(); ++i) {
    int status = 0;
    waitpid(members[i], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw std::runtime_error(fmt::format("profile member {} failed (status {})", i + 1, status));
  }
  return stages;
}

// The profile's members that the simulator runs as schedule ranks of their own (an
// expert-parallel or context-parallel group's, beside the tensor-parallel members of one rank)
// computed at once while they were timed, so every stage's compute carries the slowdown of that
// many processes on this host's cores, which the simulator applies again from the figures alone
// when its ranks compute together (sim/platform.cpp, measured_sharing: concurrency(n · members) /
// concurrency(members)). Divides each stage's compute (a pass less its collectives, W, the
// optimizer step and the synchronisation's local work) by concurrency(members) /
// concurrency(members_per_device). moe-ep2's F timed with its 2 members: 98.2 ms of compute; the
// simulator's x1.101 on it again predicted 8.5 ms of core waits per F that training did not have
// (0.5 ms). With more members than cluster.device.cores (cp2-tp2: 4 processes on 2) the sharing
// cannot be taken out of the compute alone: a member also waits in its collectives while its
// partner waits for a core (cp2-tp2's F: 27 ms of thread CPU, 48 ms in collectives timed so, as
// in training). The figures then stay walls and Profile::processes_sharing_cores says how many
// processes they carry. CPU only (on a GPU the members take the GPUs by local rank); returns
// the factor divided by.
double take_out_members_concurrency(const Scenario& scenario, Profile& profile) {
  const int members = profile_members(scenario);
  if (scenario.runtime.device != RuntimeDevice::Cpu || members == 1 || profile.concurrency.empty())
    return 1;
  if (members > scenario.cluster.device.cores) {
    profile.processes_sharing_cores = members;
    return 1;
  }
  const double factor = profile.concurrency_slowdown(members) /
                        profile.concurrency_slowdown(members_per_device(scenario));
  if (factor == 1) return 1;
  for (StageSeconds& s : profile.stages) {
    s.forward = s.tp_forward + (s.forward - s.tp_forward) / factor;
    s.backward = s.tp_backward + (s.backward - s.tp_backward) / factor;
    if (s.input_backward > 0)
      s.input_backward = s.tp_backward + (s.input_backward - s.tp_backward) / factor;
    s.weight_backward /= factor;
    s.optimizer /= factor;
    s.sync_local /= factor;
  }
  return factor;
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace

int run_profile_member(const Scenario& scenario, int member, int store_port,
                       const ProfileOptions& options) {
  configure_threads(scenario.runtime.threads, scenario.world_size());
  const CostModel cost(scenario);
  const std::unique_ptr<TrainingData> owned = open_training_data(scenario, options.data_dir);
  const TrainingData& data = *owned;
  const auto store = tcp_store("127.0.0.1", store_port, false, kMemberTimeout);
  measure_stages(scenario, cost, data, options, profile_group(scenario, store, member));
  return 0;
}

std::vector<double> allreduce_sizes(const CostModel& cost) {
  std::vector<double> sizes;
  const double largest = cost.gradient_bytes(0);
  for (double bytes = 4096; bytes < largest; bytes *= 8) sizes.push_back(bytes);
  sizes.push_back(largest);
  return sizes;
}

Profile measure_profile(const Scenario& scenario, const ProfileOptions& options) {
  Profile profile;
  const int threads = configure_threads(scenario.runtime.threads, scenario.world_size());
  profile.threads = threads;
  profile.machine = host_name() + ", " + std::to_string(std::thread::hardware_concurrency()) +
                    " cores, " + std::string(kBackendNames.name(scenario.runtime.backend)) + " " +
                    std::string(kRuntimeDeviceNames.name(scenario.runtime.device));
  const CostModel cost(scenario);
  const std::unique_ptr<TrainingData> owned = open_training_data(scenario, options.data_dir);
  const TrainingData& data = *owned;
  {
    const BusyProcesses co_tenants(options.co_tenants);
    profile.stages = measure_compute(scenario, cost, data, options);
  }
  if (options.co_tenants > 0) profile.processes_sharing_cores = 1 + options.co_tenants;
  const torch::Device device = rank_device(scenario.runtime, RankEnv{});  // local rank 0's
  const Precision precision = scenario.training.precision;
  profile.gemms = measure_gemms(model_gemms(scenario.model, scenario.layout, precision),
                                nn::dtype_of(precision), device, options.warmup, options.repeats);
  const HostOpSeconds host_op = measure_host_op_seconds(device);
  profile.host_op_seconds = host_op.grad;
  profile.host_op_seconds_no_grad = host_op.no_grad;
  if (!options.probe_command.empty()) {
    ConcurrencyFigures figures =
        measure_concurrency(scenario, profile.stages, options.probe_command);
    profile.concurrency = std::move(figures.slowdown);
    profile.concurrency_variation = std::move(figures.variation);
    profile.wake_delay = std::move(figures.wake_delay);
    profile.late_receive = std::move(figures.late_receive);
    profile.p2p_cpu_s_per_byte = figures.p2p_cpu_s_per_byte;
    profile.members_concurrency = take_out_members_concurrency(scenario, profile);
  }
  measure_communication(profile, cost.boundary_bytes(), scenario.layout.dp, allreduce_sizes(cost),
                        options.repeats, scenario.layout.zero > 0, scenario.runtime);
  // Pipeline messages between ranks that share a device go over its loopback: how it serves
  // several at once, one pair per rank of the device (at most kMaxLoopbackPairs). A pair's two
  // threads need two cores: with fewer, the ping-pongs would time the scheduler's hand-offs
  // (which wake_delay and late_receive measure) instead, and the loopback stays one shared link.
  constexpr int kMaxLoopbackPairs = 8;
  const int pairs = std::min({scenario.cluster.ranks_per_device, kMaxLoopbackPairs,
                              static_cast<int>(std::thread::hardware_concurrency()) / 2});
  if (scenario.layout.pp > 1 && pairs >= 2)
    profile.p2p_concurrency =
        p2p_concurrency(cost.boundary_bytes(), pairs, options.repeats, scenario.runtime);
  // The ranks that train next share this process's GPU.
  release_cached_memory(device);
  return profile;
}

std::string profile_cache_path(const Scenario& scenario) {
  const ModelSpec& m = scenario.model;
  const LayoutSpec& l = scenario.layout;
  std::string key =
      "v22|" + host_name() + "|" + std::to_string(std::thread::hardware_concurrency()) + "|" +
      std::string(kModelFamilyNames.name(m.family)) + "|" + std::to_string(m.vocab_size) + "|" +
      std::to_string(m.d_model) + "|" + std::to_string(m.n_layers) + "|" +
      std::to_string(m.n_heads) + "|" + std::to_string(m.ffn_hidden) + "|" +
      std::to_string(m.seq_len) + "|" + std::to_string(l.pp) + "|" +
      std::to_string(l.virtual_stages) + "|" + std::to_string(l.micro_batch_size) + "|" +
      std::to_string(l.microbatches) + "|" + std::to_string(l.dp) + "|" +
      std::string(kPrecisionNames.name(scenario.training.precision)) + "|" +
      std::string(kBackendNames.name(scenario.runtime.backend)) + "|" +
      std::to_string(scenario.runtime.threads) + "|" + std::to_string(scenario.world_size()) + "|" +
      std::to_string(scenario.cluster.ranks_per_device) + "|" +
      std::string(kAttentionNames.name(m.attention)) + "|" + std::to_string(l.tp) +
      (l.sequence_parallel ? "sp" : "") + "|" + std::to_string(l.zero) + "|" +
      std::string(kRecomputeNames.name(l.recompute)) + "|" +
      std::string(sched::kScheduleKindNames.name(l.schedule)) + "|" + std::to_string(m.kv_heads()) +
      "|" + std::to_string(l.ep) + "|" + std::to_string(l.cp) +
      std::string(kCpCommTypeNames.name(l.cp_comm_type));
  // A mixture of experts: its sizes, routing and capacity change every MoE layer's passes.
  const MoeSpec& e = m.moe;
  if (e.enabled())
    key += fmt::format("|moe {} {} {} {} {} {} {} {}", e.num_experts, e.top_k, e.expert_ffn_hidden,
                       e.shared_expert_ffn_hidden, e.first_dense_layers, e.capacity_factor,
                       e.pad_to_capacity, std::string(kRouterNames.name(e.router)));
  for (int layers : l.stage_layers) key += "," + std::to_string(layers);
  const char* cache = std::getenv("DTWIN_CACHE_DIR");
  return fmt::format("{}/profiles/{}-{:016x}.yaml", cache && *cache ? cache : ".cache",
                     scenario.name, std::hash<std::string>{}(key));
}

}  // namespace dtwin::rt
