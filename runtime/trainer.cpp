#include "runtime/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "models/cost_model.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/communicator.hpp"
#include "runtime/executor.hpp"
#include "runtime/measured_summary.hpp"
#include "runtime/peak_memory.hpp"
#include "runtime/threads.hpp"

namespace dtwin::rt {
namespace {

std::vector<uint8_t> bytes(const std::string& text) {
  return {text.begin(), text.end()};
}

// Mean loss of the step over every replica's microbatches, summed over all ranks (only the
// last stages have losses). Every rank takes part, so the step ends in a global
// synchronisation, as the global gradient-norm reduction of Megatron-LM makes it: steps do not
// overlap, and a measured step compares with the simulated one.
double global_loss(Communicator& comm, const Executor::StepResult& result) {
  std::vector<torch::Tensor> sums{
      torch::tensor({result.loss_sum, static_cast<double>(result.loss_count)}, torch::kFloat64)};
  const std::string what = "the step-end loss all-reduce";
  comm.wait(comm.post(what, {}, [&] { return comm.world().allreduce(sums); }), what, {});
  return sums[0][0].item<double>() / sums[0][1].item<double>();
}

class Progress {
 public:
  Progress(const std::string& output_dir, int64_t total_steps, double tokens_per_step, bool resume)
      : total_(total_steps), tokens_(tokens_per_step) {
    csv_.open(output_dir + "/loss.csv", resume ? std::ios::app : std::ios::trunc);
    if (!resume) csv_ << "step,loss,tokens_per_s,seconds\n";
  }
  void report(int64_t step, double loss, double seconds) {
    const double tokens_per_s = tokens_ / seconds;
    const double eta = seconds * (total_ - step - 1);
    std::printf("step %lld/%lld  loss %.4f  %.0f tokens/s  %.3f s  ETA %.0f s\n",
                static_cast<long long>(step + 1), static_cast<long long>(total_), loss,
                tokens_per_s, seconds, eta);
    std::fflush(stdout);
    csv_ << fmt::format("{},{:.9g},{:.6g},{:.6g}\n", step + 1, loss, tokens_per_s, seconds)
         << std::flush;
  }

 private:
  int64_t total_;
  double tokens_;
  std::ofstream csv_;
};

void append_digests(const std::string& output_dir, int64_t step, int rank,
                    std::map<int, StageState>& stages) {
  for (auto& [stage, state] : stages) {
    double sum = 0, squares = 0;
    for (const torch::Tensor& p : state.module->parameters()) {
      const torch::Tensor values = p.detach().to(torch::kFloat64);
      sum += values.sum().item<double>();
      squares += values.square().sum().item<double>();
    }
    const std::string row =
        fmt::format("{},{},{},{:a}/{:a}\n", step + 1, rank, stage, sum, squares);
    std::FILE* file = std::fopen((output_dir + "/digests.csv").c_str(), "a");
    if (!file) throw std::runtime_error(output_dir + "/digests.csv: cannot append");
    std::fputs(row.c_str(), file);
    std::fclose(file);
  }
}

}  // namespace

int train_rank(const Scenario& scenario, const sched::Schedule& schedule, const RankEnv& env,
               const TrainOptions& options) {
  const sched::Layout& layout = schedule.layout;
  configure_threads(scenario.runtime.threads, env.local_world_size);
  torch::manual_seed(scenario.training.seed);

  const CostModel cost(scenario);
  std::map<int, StageState> stages = build_rank_model(scenario, cost, layout, env.rank);
  const TokenDataset data(options.data_dir, scenario.model.vocab_size, scenario.model.seq_len);
  Communicator comm(env, layout, scenario.runtime.backend, scenario.runtime.timeout_s);
  const RunClock clock(comm.origin());

  int64_t first_step = 0;
  if (options.resume) {
    if (auto done = latest_checkpoint(options.output_dir, layout.num_stages())) {
      load_checkpoint(options.output_dir, *done, stages);
      first_step = *done;
    }
  }
  const int replica = layout.dp_index(env.rank);
  const bool last_stage = layout.pipeline_rank(env.rank) == layout.pp - 1;
  const bool reporter = last_stage && replica == 0;
  const double tokens_per_step =
      double(layout.dp) * layout.microbatches * cost.tokens_per_microbatch();
  std::optional<Progress> progress;
  if (reporter)
    progress.emplace(options.output_dir, scenario.training.steps, tokens_per_step, options.resume);

  Executor executor(scenario, schedule, env.rank, stages, comm, data, clock);
  std::vector<trace::TimedAction> events;
  const int every = scenario.training.checkpoint_every;
  for (int64_t step = first_step; step < scenario.training.steps; ++step) {
    const double start = clock.now();
    Executor::StepResult result = executor.run_step(step);
    const double seconds = clock.now() - start;
    events.insert(events.end(), result.events.begin(), result.events.end());
    const double loss = global_loss(comm, result);
    if (reporter) progress->report(step, loss, seconds);
    if (options.digests) append_digests(options.output_dir, step, env.rank, stages);
    const bool final_step = step + 1 == scenario.training.steps;
    if (replica == 0 && (final_step || (every > 0 && (step + 1) % every == 0)))
      save_checkpoint(options.output_dir, step + 1, stages);
  }

  // Rank 0 gathers every rank's events and peak memory through the store.
  nlohmann::json mine = {{"peak_memory_bytes", peak_memory_bytes(scenario.runtime.device)},
                         {"trace", nlohmann::json::parse(trace::to_chrome_trace(events, 0))}};
  comm.store().set("events/" + std::to_string(env.rank), bytes(mine.dump()));
  if (env.rank == 0) write_measured(comm.store(), scenario, layout, cost, options.output_dir);
  // Rank 0 may host the store: it leaves last.
  comm.store().add("finished", 1);
  while (env.rank == 0 && comm.store().add("finished", 0) < layout.world_size())
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return 0;
}

}  // namespace dtwin::rt
