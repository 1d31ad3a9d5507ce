#include "runtime/rank_env.hpp"

#include <cstdlib>
#include <stdexcept>

#include "schedules/user_error.hpp"

namespace dtwin::rt {
namespace {

std::string require(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value)
    throw UserError(std::string(name) +
                    ": expected with RANK set (RANK, WORLD_SIZE, MASTER_ADDR, "
                    "MASTER_PORT), got nothing");
  return value;
}

int integer(const char* name, const std::string& text, int min) {
  try {
    size_t used = 0;
    const int value = std::stoi(text, &used);
    if (used == text.size() && value >= min) return value;
  } catch (const std::exception&) {
  }
  throw UserError(std::string(name) + ": expected an integer >= " + std::to_string(min) +
                  ", got '" + text + "'");
}

}  // namespace

std::optional<RankEnv> rank_env_from_environment() {
  if (!std::getenv("RANK")) return std::nullopt;
  RankEnv env;
  env.rank = integer("RANK", require("RANK"), 0);
  env.world_size = integer("WORLD_SIZE", require("WORLD_SIZE"), 1);
  if (env.rank >= env.world_size)
    throw UserError("RANK: expected < WORLD_SIZE (" + std::to_string(env.world_size) + "), got '" +
                    std::to_string(env.rank) + "'");
  env.master_addr = require("MASTER_ADDR");
  env.master_port = integer("MASTER_PORT", require("MASTER_PORT"), 1);
  const char* local = std::getenv("LOCAL_WORLD_SIZE");
  env.local_world_size = local ? integer("LOCAL_WORLD_SIZE", local, 1) : env.world_size;
  const char* hosted = std::getenv("DTWIN_STORE_HOSTED");
  env.store_hosted_elsewhere = hosted && std::string(hosted) == "1";
  return env;
}

}  // namespace dtwin::rt
