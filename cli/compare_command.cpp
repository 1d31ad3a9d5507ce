// `dtwin compare OUT`: the predicted step of `dtwin simulate` against the steps `dtwin train`
// measured, from the files both wrote to OUT; writes OUT/compare.json and OUT/report.md.
#include "cli/commands.hpp"
#include "cli/compare_job.hpp"

namespace dtwin {
namespace {

struct CompareOptions {
  std::string dir;
};

int run_compare(const CompareOptions& options) {
  compare_output_dir(options.dir);
  return 0;
}

}  // namespace

void add_compare_command(CLI::App& app, int& exit_code) {
  auto [cmd, options] = add_guarded_command<CompareOptions>(
      app, exit_code, "compare",
      "Compare the predicted step (dtwin simulate) with the measured run (dtwin train)",
      run_compare);
  cmd->add_option("out", options->dir,
                  "Folder holding predicted.trace.json, predicted.summary.json, "
                  "measured.trace.json and measured.summary.json")
      ->required();
}

}  // namespace dtwin
