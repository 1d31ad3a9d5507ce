#include "cli/commands.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <stdexcept>

#include "base/closest_name.hpp"
#include "base/user_error.hpp"
#include "dtwin_commit.hpp"
#include "models/spec/scenario_loader.hpp"
#include "schedules/validate.hpp"

namespace dtwin {

void add_scenario_options(CLI::App& cmd, ScenarioOptions& options) {
  cmd.add_option("scenario", options.path, "Scenario YAML file")->required();
  cmd.add_option("--set", options.overrides,
                 "Override a scenario key, e.g. --set layout.microbatches=8 (repeatable)")
      ->type_name("KEY=VALUE");
}

Scenario ScenarioOptions::load() const {
  return load_scenario(path, overrides);
}

std::vector<std::string> ScenarioOptions::args() const {
  std::vector<std::string> out{path};
  for (const std::string& o : overrides) out.insert(out.end(), {"--set", o});
  return out;
}

void add_output_option(CLI::App& cmd, std::string& output, const std::string& help) {
  cmd.add_option("-o,--output", output, help);
}

void add_data_dir_option(CLI::App& cmd, std::string& data_dir) {
  cmd.add_option("--data-dir", data_dir,
                 "Folder of corpus.txt (scripts/fetch_data.sh) and the tokenizer cache");
}

int run_guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const UserError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const sched::ScheduleError& e) {
    std::cerr << "error: invalid schedule: " << e.what();
    return 1;
  } catch (const std::logic_error& e) {  // a broken invariant of dtwin, not of the input
    std::cerr << "internal error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

namespace {

/// "" unless the first argument names no subcommand of `app` (and is no option); else the
/// message, with the nearest subcommand's name when one is near ("did you mean simulate?").
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return "";
  const std::string word = argv[1];
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands({})) names.push_back(command->get_name());
  if (std::find(names.begin(), names.end(), word) != names.end()) return "";
  const std::optional<std::string> near = closest_name(word, names);
  return "unknown command '" + word + "'" + (near ? "; did you mean " + *near + "?" : "") +
         " (commands: " + fmt::format("{}", fmt::join(names, ", ")) + ")";
}

}  // namespace

int parse_and_run(CLI::App& app, int argc, char** argv, const int& exit_code) {
  app.name("dtwin");
  app.set_version_flag("--version",
                       std::string("dtwin ") + DTWIN_VERSION + " (" + DTWIN_COMMIT + ")");
  app.require_subcommand(1);
  if (const std::string unknown = unknown_command(app, argc, argv); !unknown.empty()) {
    std::cerr << "error: " << unknown << "\n";
    return kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitBadInput;
  }
  return exit_code;
}

}  // namespace dtwin
