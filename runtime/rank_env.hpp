// Which rank this process is, from torchrun-style environment variables.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dtwin::rt {

/// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (required together), LOCAL_WORLD_SIZE
/// (optional, default WORLD_SIZE), LOCAL_RANK (optional, default RANK mod LOCAL_WORLD_SIZE) and
/// GLOO_SOCKET_IFNAME (optional), as torchrun, Slurm or mpirun wrappers set them.
struct RankEnv {
  int rank = 0;
  int world_size = 1;
  std::string master_addr;
  int master_port = 0;
  int local_world_size = 1;
  int local_rank = 0;                   ///< this process among the host's LOCAL_WORLD_SIZE: its GPU
  bool store_hosted_elsewhere = false;  ///< DTWIN_STORE_HOSTED=1: the launcher hosts the store
  /// GLOO_SOCKET_IFNAME split at ',': the interfaces Gloo binds to (empty: the one that routes
  /// to MASTER_ADDR).
  std::vector<std::string> gloo_interfaces;
};

/// MASTER_PORT, or nullopt when it is unset or empty. Throws UserError unless it is a port
/// (1..65535).
std::optional<int> master_port_from_environment();

/// The rank environment, or nullopt when RANK is unset (dtwin then launches the ranks itself).
/// Throws UserError naming the variable when one is missing or malformed, or when
/// GLOO_SOCKET_IFNAME names an interface this host does not have.
std::optional<RankEnv> rank_env_from_environment();

}  // namespace dtwin::rt
