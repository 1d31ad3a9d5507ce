// Small training runs for the fault and multi-host tests: quickstart.yaml shrunk (the mechanism
// is not), started in the background, and the contract of a run that stops.
#pragma once

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/background_process.hpp"

namespace dtwin::test {

constexpr double kTimeout = 8;  // runtime.timeout_s of every small run

// quickstart.yaml shrunk (the mechanism is not): dp x pp ranks of a narrow 6-layer LLaMA.
inline std::vector<std::string> train_args(const std::string& out, int steps, int dp, int pp,
                                           int checkpoint_every = 0, bool resume = false) {
  std::vector<std::string> args{"train", DTWIN_SOURCE_DIR "/scenarios/quickstart.yaml"};
  for (const std::string& set : std::vector<std::string>{
           "model.d_model=64", "model.n_heads=4", "model.ffn_hidden=128", "model.seq_len=64",
           "training.precision=fp32", "training.steps=" + std::to_string(steps),
           "training.checkpoint_every=" + std::to_string(checkpoint_every),
           "runtime.timeout_s=" + std::to_string(static_cast<int>(kTimeout)),
           "layout.dp=" + std::to_string(dp), "layout.pp=" + std::to_string(pp),
           "layout.microbatches=2", "cluster.ranks_per_device=" + std::to_string(dp * pp)}) {
    args.push_back("--set");
    args.push_back(set);
  }
  for (const std::string& a : std::vector<std::string>{
           std::string("--data-dir=") + DTWIN_SOURCE_DIR + "/data", std::string("-o"), out})
    args.push_back(a);
  if (resume) args.push_back("--resume");
  return args;
}

// Waits for `pid` (at most `limit_s`), returning its exit and the log it wrote.
inline std::pair<Exit, std::string> finish(pid_t pid, const std::string& log, double limit_s) {
  const Exit exit = wait_exit(pid, limit_s);
  return {exit, read_all(log)};
}

// Runs dtwin to its end (at most `limit_s`), returning its exit and its log.
inline std::pair<Exit, std::string> run(const std::vector<std::string>& args,
                                        const std::string& log,
                                        const std::vector<std::string>& env = {},
                                        double limit_s = 300) {
  return finish(start_dtwin(args, log, env), log, limit_s);
}

// The contract of a stopped run: exit code 1 within timeout_s + 5 s of the fault.
inline bool stopped_in_time(const Exit& exit) {
  return exit.code == 1 && exit.seconds >= 0 && exit.seconds <= kTimeout + 5;
}

// Losses of loss.csv (step, loss, tokens_per_s, seconds), in step order.
inline std::vector<double> losses(const std::string& dir) {
  std::ifstream in(dir + "/loss.csv");
  std::string line;
  std::getline(in, line);
  std::vector<double> values;
  while (std::getline(in, line)) values.push_back(std::stod(line.substr(line.find(',') + 1)));
  return values;
}

}  // namespace dtwin::test
