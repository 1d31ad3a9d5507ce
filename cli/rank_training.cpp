#include "cli/rank_training.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/user_error.hpp"
#include "runtime/error_text.hpp"
#include "runtime/launcher.hpp"
#include "runtime/rank_lost.hpp"

namespace dtwin {

void check_world_size(const Scenario& scenario, const rt::RankEnv& env) {
  if (env.world_size != scenario.world_size())
    throw UserError("WORLD_SIZE: expected " + std::to_string(scenario.world_size()) +
                    " (dp*pp*tp of " + scenario.source + "), got '" +
                    std::to_string(env.world_size) + "'");
}

int train_this_rank(const Scenario& scenario, const sched::Schedule& schedule,
                    const rt::RankEnv& env, const rt::TrainOptions& train) {
  check_world_size(scenario, env);
  rt::exit_on_stop_signals(env.rank);
  try {
    return rt::train_rank(scenario, schedule, env, train);
  } catch (const rt::RankLost& lost) {
    std::fprintf(stderr, "error: %s\n", lost.what());
    std::fflush(nullptr);
    std::_Exit(1);
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& error) {
    // A failure of this rank alone (the disk is full, a checkpoint cannot be read): the
    // others are waiting for it, so leave at once rather than tear the groups down.
    std::fprintf(stderr, "error: rank %d: %s\n", env.rank, rt::error_text(error).c_str());
    std::fflush(nullptr);
    std::_Exit(1);
  }
}

}  // namespace dtwin
