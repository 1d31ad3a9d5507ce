#include "runtime/rank_env.hpp"

#include <net/if.h>

#include <cstdlib>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "base/user_error.hpp"

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

int integer(const char* name, const std::string& text, int min,
            int max = std::numeric_limits<int>::max()) {
  try {
    size_t used = 0;
    const int value = std::stoi(text, &used);
    if (used == text.size() && value >= min && value <= max) return value;
  } catch (const std::exception&) {
  }
  const std::string range = max == std::numeric_limits<int>::max()
                                ? ">= " + std::to_string(min)
                                : "in " + std::to_string(min) + ".." + std::to_string(max);
  throw UserError(std::string(name) + ": expected an integer " + range + ", got '" + text + "'");
}

// GLOO_SOCKET_IFNAME, PyTorch's variable: interface names separated by ','.
std::vector<std::string> gloo_interfaces_from_environment() {
  const char* names = std::getenv("GLOO_SOCKET_IFNAME");
  std::vector<std::string> interfaces;
  if (!names || !*names) return interfaces;
  std::stringstream list(names);
  for (std::string name; std::getline(list, name, ',');) {
    if (if_nametoindex(name.c_str()) == 0)
      throw UserError(
          "GLOO_SOCKET_IFNAME: expected interfaces of this host separated by ',', "
          "got '" +
          std::string(names) + "' ('" + name + "' is not one)");
    interfaces.push_back(name);
  }
  return interfaces;
}

}  // namespace

std::optional<int> master_port_from_environment() {
  const char* port = std::getenv("MASTER_PORT");
  if (!port || !*port) return std::nullopt;
  return integer("MASTER_PORT", port, 1, 65535);
}

std::string first_slurm_host(const std::string& nodelist) {
  const auto bad = [&] {
    return UserError(
        "SLURM_JOB_NODELIST: expected a Slurm host list such as gpu[01-04],cpu1, got '" + nodelist +
        "'");
  };
  const size_t bracket = nodelist.find('['), comma = nodelist.find(',');
  if (bracket == std::string::npos || (comma != std::string::npos && comma < bracket)) {
    const std::string host = nodelist.substr(0, comma);
    if (host.empty()) throw bad();
    return host;
  }
  const size_t close = nodelist.find(']', bracket);
  const size_t end = nodelist.find_first_of(",-]", bracket + 1);
  if (close == std::string::npos || end == bracket + 1) throw bad();
  const size_t after = nodelist.find(',', close);
  return nodelist.substr(0, bracket) + nodelist.substr(bracket + 1, end - bracket - 1) +
         nodelist.substr(close + 1,
                         after == std::string::npos ? std::string::npos : after - close - 1);
}

namespace {

// The rank environment of a task of a Slurm job step of several tasks (see
// rank_env_from_environment), or nullopt outside one.
std::optional<RankEnv> slurm_rank_env() {
  const char* procid = std::getenv("SLURM_PROCID");
  const char* tasks = std::getenv("SLURM_NTASKS");
  if (!procid || !tasks || integer("SLURM_NTASKS", tasks, 1) < 2) return std::nullopt;
  RankEnv env;
  env.world_size = integer("SLURM_NTASKS", tasks, 2);
  env.rank = integer("SLURM_PROCID", procid, 0, env.world_size - 1);
  const char* per_node = std::getenv("SLURM_NTASKS_PER_NODE");
  env.local_world_size = per_node && *per_node
                             ? integer("SLURM_NTASKS_PER_NODE", per_node, 1, env.world_size)
                             : env.world_size;
  const char* local = std::getenv("SLURM_LOCALID");
  env.local_rank = local && *local ? integer("SLURM_LOCALID", local, 0, env.local_world_size - 1)
                                   : env.rank % env.local_world_size;
  const char* master = std::getenv("MASTER_ADDR");
  env.master_addr = master && *master ? master : first_slurm_host([] {
    const char* list = std::getenv("SLURM_JOB_NODELIST");
    return std::string(list ? list : "");
  }());
  env.master_port = master_port_from_environment().value_or(29500);
  env.gloo_interfaces = gloo_interfaces_from_environment();
  return env;
}

}  // namespace

std::optional<RankEnv> rank_env_from_environment() {
  if (!std::getenv("RANK")) return slurm_rank_env();
  RankEnv env;
  env.rank = integer("RANK", require("RANK"), 0);
  env.world_size = integer("WORLD_SIZE", require("WORLD_SIZE"), 1);
  if (env.rank >= env.world_size)
    throw UserError("RANK: expected < WORLD_SIZE (" + std::to_string(env.world_size) + "), got '" +
                    std::to_string(env.rank) + "'");
  env.master_addr = require("MASTER_ADDR");
  require("MASTER_PORT");
  env.master_port = *master_port_from_environment();
  const char* local = std::getenv("LOCAL_WORLD_SIZE");
  env.local_world_size = local ? integer("LOCAL_WORLD_SIZE", local, 1) : env.world_size;
  const char* local_rank = std::getenv("LOCAL_RANK");
  env.local_rank = local_rank && *local_rank
                       ? integer("LOCAL_RANK", local_rank, 0, env.local_world_size - 1)
                       : env.rank % env.local_world_size;
  const char* hosted = std::getenv("DTWIN_STORE_HOSTED");
  env.store_hosted_elsewhere = hosted && std::string(hosted) == "1";
  env.gloo_interfaces = gloo_interfaces_from_environment();
  return env;
}

}  // namespace dtwin::rt
