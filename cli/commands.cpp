#include "cli/commands.hpp"

#include <iostream>
#include <stdexcept>

#include "base/user_error.hpp"
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

int parse_and_run(CLI::App& app, int argc, char** argv, const int& exit_code) {
  app.name("dtwin");
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitBadInput;
  }
  return exit_code;
}

}  // namespace dtwin
