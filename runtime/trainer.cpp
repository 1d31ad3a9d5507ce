#include "runtime/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <thread>

#include "base/file_writer.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/classification_eval.hpp"
#include "runtime/communicator.hpp"
#include "runtime/cpu_tensor_memory.hpp"
#include "runtime/data/open_training_data.hpp"
#include "runtime/executor.hpp"
#include "runtime/expert_counts.hpp"
#include "runtime/fault_injection.hpp"
#include "runtime/hf_checkpoint.hpp"
#include "runtime/interface_counters.hpp"
#include "runtime/lr_schedule.hpp"
#include "runtime/measured_summary.hpp"
#include "runtime/peak_memory.hpp"
#include "runtime/rank_device.hpp"
#include "runtime/threads.hpp"
#include "runtime/training_inputs.hpp"

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
      torch::tensor({result.loss_sum, static_cast<double>(result.loss_count)}, torch::kFloat64)
          .to(comm.device())};
  const std::string what = "the step-end loss all-reduce";
  comm.wait(comm.post(what, {}, [&] { return comm.world().allreduce(sums); }), what, {});
  const torch::Tensor total = sums[0].cpu();  // on a GPU: after the reduction ran
  return total[0].item<double>() / total[1].item<double>();
}

// The mean of per-step values, the first (warm-up) step left out when there are more, as the
// measured summary's times are (trace::summarize_steps).
double mean_step_value(const std::vector<double>& values) {
  if (values.empty()) return 0;
  const auto first = values.begin() + (values.size() > 1 ? 1 : 0);
  return std::accumulate(first, values.end(), 0.0) / static_cast<double>(values.end() - first);
}

// The counters of the interface `comm`'s groups use; nullopt when it is unknown.
std::optional<InterfaceCounters> interface_counters(const Communicator& comm) {
  if (comm.interface().empty()) return std::nullopt;
  return read_interface_counters(comm.interface());
}

// The interface's traffic per step (means over the steps but the first, as mean_step_value), the
// interface and the host's address; null without counters.
nlohmann::json wire_json(const std::vector<InterfaceCounters>& steps, const Communicator& comm) {
  if (steps.empty()) return nullptr;
  auto mean = [&](int64_t InterfaceCounters::*field) {
    std::vector<double> values;
    for (const InterfaceCounters& c : steps) values.push_back(static_cast<double>(c.*field));
    return mean_step_value(values);
  };
  return {{"interface", comm.interface()},
          {"address", comm.address()},
          {"sent_bytes", mean(&InterfaceCounters::sent_bytes)},
          {"received_bytes", mean(&InterfaceCounters::received_bytes)},
          {"sent_packets", mean(&InterfaceCounters::sent_packets)},
          {"received_packets", mean(&InterfaceCounters::received_packets)}};
}

class Progress {
 public:
  // A run resumed after `first_step` steps keeps loss.csv's rows up to that step and drops
  // those logged after the checkpoint it resumes from, so that every step appears once.
  Progress(const std::string& output_dir, int64_t total_steps, double tokens_per_step,
           int64_t first_step)
      : total_(total_steps), tokens_(tokens_per_step), path_(output_dir + "/loss.csv") {
    std::string kept = "step,loss,tokens_per_s,seconds\n";
    std::istringstream old(first_step > 0 ? read_file(path_).value_or("") : "");
    for (std::string row; std::getline(old, row);) {
      const long long step = std::strtoll(row.c_str(), nullptr, 10);
      if (step >= 1 && step <= first_step) kept += row + "\n";
    }
    write_file(path_, kept);
    csv_.open(path_, std::ios::app);
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
    if (!csv_) throw std::runtime_error(path_ + ": cannot write (is the disk full?)");
  }

 private:
  int64_t total_;
  double tokens_;
  std::string path_;
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

// An encoder's dev-split evaluation after step `step` (0-based): every replica scores its share;
// the reporter prints the scores and appends them to OUT/eval.csv.
void evaluate(const Scenario& scenario, std::map<int, StageState>& stages,
              const ClassificationDataset& data, int replica, Communicator& comm, bool reporter,
              const std::string& output_dir, std::int64_t step) {
  const ClassificationScores s =
      evaluate_classifier(*stages.begin()->second.module, data, scenario.layout.micro_batch_size,
                          replica, scenario.layout.dp, comm);
  if (!reporter) return;
  std::printf(
      "eval after step %lld: accuracy %.4f  F1 %.4f  (%lld dev examples; majority class "
      "%.4f)\n",
      static_cast<long long>(step + 1), s.accuracy, s.f1, static_cast<long long>(s.examples),
      s.majority);
  std::fflush(stdout);
  const std::string path = output_dir + "/eval.csv";
  const bool fresh = !std::ifstream(path).good();
  std::ofstream csv(path, std::ios::app);
  if (fresh) csv << "step,accuracy,f1,majority,examples\n";
  csv << fmt::format("{},{:.6f},{:.6f},{:.6f},{}\n", step + 1, s.accuracy, s.f1, s.majority,
                     s.examples);
  if (!csv) throw std::runtime_error(path + ": cannot append");
}

// Loads the newest complete checkpoint into `stages` and returns the steps it holds (0 when
// there is none); rank 0 says which one, and which newer ones it passed over and why.
int64_t resume(const std::string& output_dir, const sched::Layout& layout, int rank,
               std::map<int, StageState>& stages) {
  const CheckpointChoice choice = latest_checkpoint(output_dir, layout.num_stages(), layout.tp);
  if (rank == 0) {
    for (const std::string& why : choice.skipped) std::printf("resume: skipping %s\n", why.c_str());
    if (choice.steps_done)
      std::printf("resume: from %s (%lld steps done)\n", choice.directory.c_str(),
                  static_cast<long long>(*choice.steps_done));
    else
      std::printf("resume: no complete checkpoint in %s/checkpoints; starting at step 1\n",
                  output_dir.c_str());
    std::fflush(stdout);
  }
  if (!choice.steps_done) return 0;
  load_checkpoint(output_dir, *choice.steps_done, stages, layout.tp_index(rank), layout.tp);
  return *choice.steps_done;
}

}  // namespace

int train_rank(const Scenario& given, const sched::Schedule& schedule, const RankEnv& env,
               const TrainOptions& options) {
  const sched::Layout& layout = schedule.layout;
  count_cpu_tensor_bytes();  // the measured peak memory: every tensor from here on
  configure_threads(given.runtime.threads, env.local_world_size);
  torch::manual_seed(given.training.seed);

  const std::unique_ptr<TrainingData> owned = open_training_data(given, options.data_dir);
  const TrainingData& data = *owned;
  const Scenario scenario = with_epoch_steps(given, data);  // training.epochs' steps
  const StagePartition partition(scenario);
  const torch::Device device = rank_device(scenario.runtime, env);
  Communicator comm(env, layout, scenario.runtime.backend, scenario.runtime.timeout_s, device,
                    scenario.layout.ep, scenario.layout.cp);
  const RunClock clock(comm.origin());
  const int rank = layout.group_of(env.rank), tp_index = layout.tp_index(env.rank);
  const nn::TensorParallelGroup tp{{comm.tensor_parallel(), tp_index, layout.tp},
                                   scenario.layout.sequence_parallel};
  const nn::ExpertParallelGroup ep{comm.expert_parallel(),
                                   layout.dp_index(rank) % scenario.layout.ep, scenario.layout.ep};
  const nn::ContextParallelGroup cp{comm.context_parallel(),
                                    layout.dp_index(rank) % scenario.layout.cp, scenario.layout.cp};
  std::map<int, StageState> stages =
      build_rank_model(scenario, partition, layout, rank, tp, device, ep, cp);

  arm_fault_injection(env.rank);
  const int64_t first_step =
      options.resume ? resume(options.output_dir, layout, env.rank, stages) : 0;
  const int replica = layout.dp_index(rank);
  const bool last_stage = layout.pipeline_rank(rank) == layout.loss_pipeline_rank();
  const bool reporter = last_stage && replica == 0 && tp_index == 0;
  const double tokens_per_step = double(scenario.layout.dp) * layout.microbatches *
                                 scenario.layout.micro_batch_size * scenario.model.seq_len;
  std::optional<Progress> progress;
  if (reporter)
    progress.emplace(options.output_dir, scenario.training.steps, tokens_per_step, first_step);

  Executor executor(scenario, partition, schedule, env.rank, stages, comm, data, clock);
  std::vector<trace::TimedAction> events;
  std::vector<ExpertCount> expert_rows;   // replica 0's first tensor-parallel member's
  std::vector<double> all_to_all_bytes;   // sent to the other expert-parallel members, per step
  std::vector<double> cp_exchange_bytes;  // sent to the next context-parallel member, per step
  double peak_imbalance = 0;              // the worst microbatch's (peak_member_imbalance)
  // Per step: the dense gradients' bytes to and from the DP group (Executor::gradient_wire_bytes)
  // and the host interface's counters, when the groups' interface is known.
  std::vector<double> gradient_sent, gradient_received;
  std::vector<InterfaceCounters> wire;
  const int every = scenario.training.checkpoint_every;
  const auto* classification = dynamic_cast<const ClassificationDataset*>(&data);
  if (classification && reporter && first_step == 0)
    std::filesystem::remove(options.output_dir + "/eval.csv");
  const int eval_every = scenario.training.eval_every;
  for (int64_t step = first_step; step < scenario.training.steps; ++step) {
    set_learning_rate(stages, learning_rate(scenario.training, step));
    // The interface is read outside the step's time.
    const std::optional<InterfaceCounters> wire_before = interface_counters(comm);
    const double start = clock.now();
    const std::int64_t sent_before = ep.bytes_sent->load(), ring_before = cp.bytes_sent->load();
    const WireBytes gradients_before = executor.gradient_wire_bytes();
    Executor::StepResult result = executor.run_step(step);
    all_to_all_bytes.push_back(static_cast<double>(ep.bytes_sent->load() - sent_before));
    cp_exchange_bytes.push_back(static_cast<double>(cp.bytes_sent->load() - ring_before));
    events.insert(events.end(), result.events.begin(), result.events.end());
    const double loss = global_loss(comm, result);
    // Every rank starts a step after the previous one's loss reduction and ends it with this
    // one's: the step's time, whichever rank reports it (a rank's own actions may end earlier).
    const double seconds = clock.now() - start;
    if (wire_before) wire.push_back(*interface_counters(comm) - *wire_before);
    const WireBytes gradients = executor.gradient_wire_bytes();
    gradient_sent.push_back(static_cast<double>(gradients.sent - gradients_before.sent));
    gradient_received.push_back(
        static_cast<double>(gradients.received - gradients_before.received));
    if (reporter) progress->report(step, loss, seconds);
    peak_imbalance = std::max(peak_imbalance, peak_member_imbalance(stages));
    const std::vector<ExpertCount> counted = finish_expert_counts(stages, comm, step);
    if (replica == 0 && tp_index == 0)
      expert_rows.insert(expert_rows.end(), counted.begin(), counted.end());
    const bool final_step = step + 1 == scenario.training.steps;
    const bool epoch_done = classification && scenario.training.epochs > 0 &&
                            ends_epoch(step, classification->train_examples(),
                                       int64_t{scenario.layout.dp} * layout.microbatches *
                                           scenario.layout.micro_batch_size);
    if (classification &&
        (final_step || epoch_done || (eval_every > 0 && (step + 1) % eval_every == 0)))
      evaluate(scenario, stages, *classification, replica, comm, reporter, options.output_dir,
               step);
    if (classification && final_step && replica == 0) {
      executor.gather_all_parameters();
      // The dataset's tokenizer goes with the weights, as a Hugging Face model folder holds it.
      save_hf_encoder(stages.begin()->second.module->encoder(), classification->labels(),
                      options.output_dir + "/hf-checkpoint",
                      dataset_dir(scenario, options.data_dir) + "/tokenizer");
      executor.release_all_parameters();
    }
    const bool checkpoint = final_step || (every > 0 && (step + 1) % every == 0);
    if (options.digests || checkpoint) executor.gather_all_parameters();
    if (options.digests) append_digests(options.output_dir, step, env.rank, stages);
    if (replica == 0 && checkpoint)
      save_checkpoint(options.output_dir, step + 1, stages, tp_index, layout.tp);
    if (options.digests || checkpoint) executor.release_all_parameters();
  }

  // Rank 0 gathers every rank's events and peak memory through the store.
  nlohmann::json mine = {{"peak_memory_bytes", peak_memory_bytes(scenario.runtime.device)},
                         {"model_state_bytes", executor.peak_model_state_bytes()},
                         {"tokens_per_expert", to_json(expert_rows)},
                         {"all_to_all_bytes", mean_step_value(all_to_all_bytes)},
                         {"cp_exchange_bytes", mean_step_value(cp_exchange_bytes)},
                         {"peak_load_imbalance", peak_imbalance},
                         {"gradient_sent_bytes", mean_step_value(gradient_sent)},
                         {"gradient_received_bytes", mean_step_value(gradient_received)},
                         {"wire", wire_json(wire, comm)},
                         {"trace", nlohmann::json::parse(trace::to_chrome_trace(events, layout))}};
  comm.store().set("events/" + std::to_string(env.rank), bytes(mine.dump()));
  if (env.rank == 0) write_measured(comm.store(), scenario, layout, options.output_dir);
  // Rank 0 may host the store: it leaves last.
  comm.store().add("finished", 1);
  while (env.rank == 0 && comm.store().add("finished", 0) < layout.world_size())
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return 0;
}

}  // namespace dtwin::rt
