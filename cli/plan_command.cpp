// `dtwin plan`: searches the layouts of a scenario's model on a number of GPUs, ranks them by a
// closed-form estimate, simulates the best with SimGrid and writes plan.md, plan.csv and best.yaml.
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <set>

#include "base/file_writer.hpp"
#include "cli/commands.hpp"
#include "cli/output_dir.hpp"
#include "cli/plan_training.hpp"
#include "plan/alike_layouts.hpp"
#include "plan/best_scenario.hpp"
#include "plan/layout_search.hpp"
#include "plan/plan_report.hpp"
#include "plan/plan_simulation.hpp"

namespace dtwin {
namespace {

struct PlanOptions {
  ScenarioOptions scenario;
  std::string output;
  int gpus = 0;          // 0: the scenario's
  int global_batch = 0;  // 0: the scenario's
  int top = 20;
  std::vector<std::string> keep;
  int run = 0;  // layouts to train (dtwin-runtime only)
  int run_steps = 5;
  std::string data_dir = "data";
};

// A one-line progress bar on stderr, "LABEL done/total", redrawn on a terminal and written
// once, when done, otherwise.
auto progress_bar(const std::string& label) {
  return [label, terminal = isatty(STDERR_FILENO) != 0](int done, int total) {
    if (!terminal && done < total) return;
    std::fprintf(stderr, "%s%s %d/%d%s", terminal ? "\r" : "", label.c_str(), done, total,
                 done == total ? "\n" : "");
  };
}

// The rows of plan.csv: the fitting layouts in the estimate's order, in their groups of alike
// layouts (group_alike), with the scenario's own layout marked, or inserted where its estimate
// places it (group 0) when the search did not keep it.
std::vector<PlanRow> ranked_rows(const LayoutSearch& search) {
  std::vector<const LayoutCandidate*> fitting;
  for (const LayoutCandidate& c : search.fitting) fitting.push_back(&c);
  const std::vector<int> groups = group_alike(fitting);
  std::vector<PlanRow> rows;
  for (size_t i = 0; i < fitting.size(); ++i)
    rows.push_back({fitting[i], std::nullopt, std::nullopt, groups[i], false});
  const InputLayout& input = search.input;
  if (input.searched) rows[input.rank - 1].input = true;
  if (input.searched || !input.candidate) return rows;
  const auto at = std::ranges::find_if(rows, [&](const PlanRow& row) {
    return row.candidate->estimate.step_s >= input.candidate->estimate.step_s;
  });
  rows.insert(at, {&*input.candidate, std::nullopt, std::nullopt, 0, true});
  return rows;
}

// The rows to simulate: the first layout of each of the `top` fastest groups, then the
// scenario's own. A group whose first layout has the same estimate as a chosen one and differs
// from it only in minor settings (differ_in_minor_settings) takes more memory for no time (the
// rows are ordered so) and is not simulated.
std::vector<size_t> choose_simulated(const std::vector<PlanRow>& rows, int top) {
  std::vector<size_t> chosen;
  std::set<int> groups;
  for (size_t i = 0; i < rows.size() && chosen.size() < size_t(top); ++i) {
    const LayoutCandidate& c = *rows[i].candidate;
    if (rows[i].group == 0 || !groups.insert(rows[i].group).second) continue;
    const bool dominated = std::ranges::any_of(chosen, [&](size_t j) {
      return rows[j].candidate->estimate.step_s == c.estimate.step_s &&
             differ_in_minor_settings(rows[j].candidate->scenario, c.scenario);
    });
    if (!dominated) chosen.push_back(i);
  }
  const auto input = std::ranges::find_if(rows, [](const PlanRow& row) { return row.input; });
  const size_t own = static_cast<size_t>(input - rows.begin());
  if (input != rows.end() && std::ranges::find(chosen, own) == chosen.end()) chosen.push_back(own);
  return chosen;
}

// OUT/best.yaml: the fastest simulated layout of the search as a complete scenario.
void write_best(const PlanOptions& options, const std::vector<PlanRow>& rows,
                const std::string& path) {
  const PlanRow* best = nullptr;
  for (const PlanRow& row : rows)
    if (row.simulated && row.group > 0 &&
        (!best || row.simulated->step_time_s < best->simulated->step_time_s))
      best = &row;
  if (!best) throw std::runtime_error("plan: no layout could be simulated");
  const std::vector<std::string> header = {
      "dtwin plan's best layout for " + options.scenario.path + ": " +
          describe_layout(best->candidate->scenario),
      fmt::format("simulated step {:.3f} s (estimated {:.3f} s); the scenario with its layout "
                  "keys replaced",
                  best->simulated->step_time_s, best->candidate->estimate.step_s)};
  write_file(path, best_scenario_yaml(options.scenario.path, options.scenario.overrides,
                                      *best->candidate, header));
}

// Trains the `run` fastest simulated rows of the search for real and records their measured
// tokens/s.
void train_best(const PlanOptions& options, const PlanTraining& training, const std::string& dir,
                std::vector<PlanRow>& rows) {
  std::vector<PlanRow*> fastest;
  for (PlanRow& row : rows)
    if (row.simulated && row.group > 0) fastest.push_back(&row);
  std::ranges::stable_sort(fastest, {},
                           [](const PlanRow* row) { return row->simulated->step_time_s; });
  fastest.resize(std::min<size_t>(options.run, fastest.size()));
  for (size_t i = 0; i < fastest.size(); ++i) {
    std::cout << "== training layout " << i + 1 << " of " << fastest.size() << ": "
              << describe_layout(fastest[i]->candidate->scenario) << std::endl;
    fastest[i]->measured_tokens_per_s = training.train(options.scenario, *fastest[i]->candidate,
                                                       dir + "/plan-runs/" + std::to_string(i + 1),
                                                       options.data_dir, options.run_steps);
  }
}

int run_plan(const PlanOptions& options, const PlanTraining* training) {
  const Scenario base = options.scenario.load();
  const LayoutSpec& l = base.layout;
  PlanRequest request{base, options.gpus, options.global_batch, options.keep, {}};
  if (options.run > 0) {
    if (!training) throw std::logic_error("plan --run: only dtwin-runtime can train");
    request.check = training->check;  // only layouts `dtwin train` can execute
  }
  if (options.run < 0 || options.run_steps < 2)
    throw UserError("--run " + std::to_string(options.run) + " --run-steps " +
                    std::to_string(options.run_steps) +
                    ": expected a count of layouts >= 0 and at least 2 steps");
  if (request.gpus == 0) request.gpus = base.world_size();
  if (request.global_batch == 0) request.global_batch = l.dp * l.microbatches * l.micro_batch_size;
  if (options.top < 1)
    throw UserError("--top " + std::to_string(options.top) + ": expected at least 1");

  const LayoutSearch search = search_layouts(request, progress_bar("checking layouts"));
  std::vector<PlanRow> rows = ranked_rows(search);
  const std::vector<size_t> chosen = choose_simulated(rows, options.top);
  std::vector<const LayoutCandidate*> simulate;
  for (size_t i : chosen) simulate.push_back(rows[i].candidate);

  const std::string dir = prepare_output_dir(options.output, base);
  const auto summaries =
      simulate_candidates(simulate, dir + "/plan-simulations", progress_bar("simulating"));
  for (size_t k = 0; k < chosen.size(); ++k) rows[chosen[k]].simulated = summaries[k];
  if (options.run > 0) train_best(options, *training, dir, rows);
  const std::string title = "plan: " + base.name + " on " + std::to_string(request.gpus) +
                            " GPUs, global batch " + std::to_string(request.global_batch);
  const std::string markdown = plan_markdown(title, base, search, rows);
  write_file(dir + "/plan.md", markdown);
  write_file(dir + "/plan.csv", plan_csv(rows));
  write_best(options, rows, dir + "/best.yaml");
  std::cout << markdown << "\nwrote " << dir << "/plan.md, plan.csv and best.yaml (dtwin simulate "
            << dir << "/best.yaml)\n";
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, int& exit_code, const PlanTraining* training) {
  auto [cmd, options] = add_guarded_command<PlanOptions>(
      app, exit_code, "plan",
      "Search the layouts of the scenario's model, rank them, simulate the best",
      [training](const PlanOptions& options) { return run_plan(options, training); });
  add_output_option(*cmd, options->output);
  cmd->add_option("--gpus", options->gpus, "GPUs (ranks) to lay out (default: the scenario's)");
  cmd->add_option("--global-batch", options->global_batch,
                  "Sequences per step (default: the scenario's dp × microbatches × mbs)");
  cmd->add_option("--top", options->top, "Layouts to simulate with SimGrid")->capture_default_str();
  cmd->add_option("--keep", options->keep,
                  "Hold a setting at the scenario's value: zero, recompute, sequence_parallel, "
                  "ep (layout.ep and layout.etp), cp, dp_shard or precision (repeatable)");
  cmd->add_option("--run", options->run,
                  "Train the K fastest simulated layouts for real on this machine (only layouts "
                  "dtwin train can execute are searched)");
  cmd->add_option("--run-steps", options->run_steps, "Training steps per --run layout")
      ->capture_default_str();
  add_data_dir_option(*cmd, options->data_dir);
}

}  // namespace dtwin
