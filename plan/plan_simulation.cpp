#include "plan/plan_simulation.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>

#include "base/file_writer.hpp"
#include "models/cost/cost_model.hpp"
#include "models/cost/scenario_schedule.hpp"
#include "sim/simulator.hpp"

namespace dtwin {
namespace {

std::string summary_path(const std::string& dir, size_t index) {
  return dir + "/" + std::to_string(index) + ".summary.json";
}

// The child's body: simulate one layout and write its summary; the exit code says whether it
// could.
[[noreturn]] void simulate_child(const Scenario& scenario, const std::string& path) {
  int code = 0;
  try {
    const sched::Schedule schedule = build_schedule(scenario);
    const CostModel cost(scenario);
    write_file(path, trace::to_summary_json(sim::simulate(scenario, schedule, cost, {}).summary));
  } catch (const std::exception& e) {
    std::cerr << "plan: " << scenario.name << ": " << e.what() << "\n";
    code = 1;
  }
  std::cout.flush();
  _exit(code);
}

std::optional<trace::StepSummary> read_summary(const std::string& path) {
  const std::optional<std::string> text = read_file(path);
  if (!text) return std::nullopt;
  return trace::from_summary_json(*text);
}

}  // namespace

std::vector<std::optional<trace::StepSummary>> simulate_candidates(
    const std::vector<const LayoutCandidate*>& candidates, const std::string& dir,
    const std::function<void(int, int)>& progress) {
  std::filesystem::create_directories(dir);
  const size_t parallel = std::max(1u, std::thread::hardware_concurrency());
  std::map<pid_t, size_t> running;  // pid -> candidate index
  std::vector<bool> ok(candidates.size(), false);
  size_t next = 0;
  int done = 0;
  const int total = static_cast<int>(candidates.size());
  progress(0, total);
  while (next < candidates.size() || !running.empty()) {
    while (next < candidates.size() && running.size() < parallel) {
      std::cout.flush();
      const pid_t pid = fork();
      if (pid < 0) throw std::runtime_error("plan: cannot fork a simulation");
      if (pid == 0) simulate_child(candidates[next]->scenario, summary_path(dir, next));
      running[pid] = next++;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) throw std::runtime_error("plan: lost a simulation process");
    ok[running.at(pid)] = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    running.erase(pid);
    progress(++done, total);
  }
  std::vector<std::optional<trace::StepSummary>> summaries;
  for (size_t i = 0; i < candidates.size(); ++i)
    summaries.push_back(ok[i] ? read_summary(summary_path(dir, i)) : std::nullopt);
  return summaries;
}

}  // namespace dtwin
