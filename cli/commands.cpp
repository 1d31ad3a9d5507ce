#include "cli/commands.hpp"

#include <iostream>
#include <stdexcept>

#include "schedules/user_error.hpp"
#include "schedules/validate.hpp"

namespace dtwin {

void add_scenario_options(CLI::App& cmd, ScenarioOptions& options) {
  cmd.add_option("scenario", options.path, "Scenario YAML file")->required();
  cmd.add_option("--set", options.overrides,
                 "Override a scenario key, e.g. --set layout.microbatches=8 (repeatable)")
      ->type_name("KEY=VALUE");
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

}  // namespace dtwin
