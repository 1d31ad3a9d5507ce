#include "runtime/profiler.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <thread>

#include "models/cost_model.hpp"
#include "models/stage_module.hpp"
#include "runtime/clock.hpp"
#include "runtime/comm_benchmark.hpp"
#include "runtime/data/token_dataset.hpp"
#include "runtime/median.hpp"
#include "runtime/threads.hpp"

namespace dtwin::rt {
namespace {

// One stage with one microbatch of input: real tokens on the first stage, random hidden
// states elsewhere, and a random output gradient for stages without the loss.
struct StageRun {
  StageRun(const Scenario& scenario, const StageCost& stage, const TokenDataset& data)
      : stage(stage), module(std::make_shared<nn::StageModule>(scenario, stage)) {
    const ModelSpec& m = scenario.model;
    const int b = scenario.layout.micro_batch_size;
    batch = data.batch(0, 0, 0, 1, 1, b, scenario.training.seed);
    input = stage.has_embedding ? batch.inputs
                                : torch::randn({b, m.seq_len, m.d_model}).requires_grad_(true);
    grad = torch::randn({b, m.seq_len, m.d_model}) * 1e-3;
  }
  torch::Tensor forward() {
    return module->forward(input, stage.has_head ? batch.targets : torch::Tensor());
  }
  void backward(const torch::Tensor& out) {
    if (stage.has_head)
      out.backward();
    else
      out.backward(grad);
  }

  const StageCost& stage;
  std::shared_ptr<nn::StageModule> module;
  Batch batch;
  torch::Tensor input, grad;
};

// Seconds `body` takes.
template <typename Body>
double timed(Body&& body) {
  const double start = wall_seconds();
  body();
  return wall_seconds() - start;
}

// Times F, B, I, W and the optimizer step of one stage, one microbatch at a time.
StageSeconds measure_stage(const Scenario& scenario, const CostModel& cost, int s,
                           const TokenDataset& data, const ProfileOptions& options) {
  StageRun run(scenario, cost.stage(s), data);
  torch::optim::AdamW optimizer(run.module->parameters(),
                                torch::optim::AdamWOptions(scenario.training.lr).weight_decay(0.1));
  std::vector<double> f, b, in, w, opt;
  for (int i = -options.warmup; i < options.repeats; ++i) {
    torch::Tensor out;
    const double forward = timed([&] { out = run.forward(); });
    const double backward = timed([&] { run.backward(out); });
    out = run.forward();
    nn::WeightGradStash stash;
    const double input_backward = timed([&] {
      nn::StashGuard guard(&stash);
      run.backward(out);
    });
    const double weight_backward = timed([&] { stash.apply(); });
    const double step = timed([&] {
      optimizer.step();
      optimizer.zero_grad();
    });
    if (i < 0) continue;
    f.push_back(forward);
    b.push_back(backward);
    in.push_back(input_backward);
    w.push_back(weight_backward);
    opt.push_back(step);
  }
  return {median(f), median(b), median(in), median(w), median(opt)};
}

// Slowdown beyond the fair share of the cores when `ranks` ranks share `cores` cores and all
// compute at once: each of `ranks` threads runs F and B of stage (thread mod stages) repeatedly;
// its time against its isolated time x ranks/cores, median over threads (1 if ranks <= cores).
double measure_contention(const Scenario& scenario, const CostModel& cost, const Profile& profile,
                          const TokenDataset& data, int ranks, int cores) {
  if (ranks <= cores) return 1;
  const int repeats = 5;
  std::vector<double> ratios(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      const int s = r % cost.num_stages();
      StageRun run(scenario, cost.stage(s), data);
      run.backward(run.forward());  // warm-up
      const double seconds = timed([&] {
        for (int i = 0; i < repeats; ++i) run.backward(run.forward());
      });
      const double alone = profile.stages[s].forward + profile.stages[s].backward;
      ratios[r] = seconds / repeats / (alone * ranks / cores);
    });
  for (std::thread& t : threads) t.join();
  return std::max(1.0, median(ratios));
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace

Profile measure_profile(const Scenario& scenario, const ProfileOptions& options) {
  Profile profile;
  const int threads = configure_threads(scenario.runtime.threads, scenario.world_size());
  profile.threads = threads;
  profile.machine = host_name() + ", " + std::to_string(std::thread::hardware_concurrency()) +
                    " cores, " + std::string(kBackendNames.name(scenario.runtime.backend)) + " " +
                    std::string(kRuntimeDeviceNames.name(scenario.runtime.device));
  const CostModel cost(scenario);
  const TokenDataset data(options.data_dir, scenario.model.vocab_size, scenario.model.seq_len);
  for (int s = 0; s < cost.num_stages(); ++s)
    profile.stages.push_back(measure_stage(scenario, cost, s, data, options));
  profile.contention =
      measure_contention(scenario, cost, profile, data, scenario.cluster.ranks_per_device,
                         scenario.cluster.device.cores);
  std::vector<double> sizes;
  const double largest = cost.gradient_bytes(0);
  for (double bytes = 4096; bytes < largest; bytes *= 8) sizes.push_back(bytes);
  sizes.push_back(largest);
  measure_communication(profile, cost.boundary_bytes(), scenario.layout.dp, sizes, options.repeats);
  return profile;
}

std::string profile_cache_path(const Scenario& scenario) {
  const ModelSpec& m = scenario.model;
  const LayoutSpec& l = scenario.layout;
  std::string key =
      "v2|" + host_name() + "|" + std::to_string(std::thread::hardware_concurrency()) + "|" +
      std::string(kModelFamilyNames.name(m.family)) + "|" + std::to_string(m.vocab_size) + "|" +
      std::to_string(m.d_model) + "|" + std::to_string(m.n_layers) + "|" +
      std::to_string(m.n_heads) + "|" + std::to_string(m.ffn_hidden) + "|" +
      std::to_string(m.seq_len) + "|" + std::to_string(l.pp) + "|" +
      std::to_string(l.virtual_stages) + "|" + std::to_string(l.micro_batch_size) + "|" +
      std::to_string(l.dp) + "|" + std::string(kPrecisionNames.name(scenario.training.precision)) +
      "|" + std::string(kBackendNames.name(scenario.runtime.backend)) + "|" +
      std::to_string(scenario.runtime.threads) + "|" + std::to_string(scenario.world_size());
  for (int layers : l.stage_layers) key += "," + std::to_string(layers);
  return fmt::format(".cache/profiles/{}-{:016x}.yaml", scenario.name,
                     std::hash<std::string>{}(key));
}

}  // namespace dtwin::rt
