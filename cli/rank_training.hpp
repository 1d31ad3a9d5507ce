// Training as one rank of a torchrun-style launch: what `dtwin train` and `dtwin run` do when
// RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are set.
#pragma once

#include "models/spec/scenario.hpp"
#include "runtime/rank_env.hpp"
#include "runtime/trainer.hpp"
#include "schedules/schedule.hpp"

namespace dtwin {

/// Throws UserError "WORLD_SIZE: expected N (dp*pp*tp of FILE), got 'M'" unless the launch has
/// the scenario's world size.
void check_world_size(const Scenario& scenario, const rt::RankEnv& env);

/// Trains `schedule` as rank env.rank (rt::train_rank) and returns its exit code. Throws
/// check_world_size's UserError. A lost peer or a failure of this
/// rank alone prints "error: ..." and leaves the process at once with exit code 1 (tearing the
/// process groups down could block on a dead peer); SIGINT and SIGTERM end it with exit code 1.
int train_this_rank(const Scenario& scenario, const sched::Schedule& schedule,
                    const rt::RankEnv& env, const rt::TrainOptions& train);

}  // namespace dtwin
