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

/// The rank environment, or nullopt when neither torchrun's RANK nor a Slurm job step of several
/// tasks says this process is one rank (dtwin then launches the ranks itself). Under Slurm (RANK
/// unset, SLURM_PROCID set, SLURM_NTASKS > 1, as `srun --ntasks=N dtwin train ...` starts them)
/// Slurm's variables stand for torchrun's: SLURM_PROCID for RANK, SLURM_NTASKS for WORLD_SIZE,
/// SLURM_LOCALID for LOCAL_RANK, SLURM_NTASKS_PER_NODE for LOCAL_WORLD_SIZE, the first host of
/// SLURM_JOB_NODELIST for MASTER_ADDR (MASTER_ADDR, when set, wins), and MASTER_PORT, else 29500
/// (torchrun's default). Throws UserError naming the variable when one is missing or malformed,
/// or when GLOO_SOCKET_IFNAME names an interface this host does not have.
std::optional<RankEnv> rank_env_from_environment();

/// The first host of a Slurm host list ("gpu[007-009,012],cpu1" -> "gpu007"). Throws UserError
/// for an empty or malformed list.
std::string first_slurm_host(const std::string& nodelist);

}  // namespace dtwin::rt
