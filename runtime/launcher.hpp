// The local launcher: one process per rank on this machine, like torchrun --standalone.
#pragma once

#include <string>
#include <vector>

namespace dtwin::rt {

/// Hosts the rendezvous store on 127.0.0.1:MASTER_PORT, or on a free port when MASTER_PORT is
/// unset, and starts `world_size` copies of this executable with `args` and RANK, WORLD_SIZE,
/// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT set. If a rank fails (non-zero exit
/// or signal) it says which, gives the others timeout_s + 5 s to stop, then kills the rest. On
/// SIGINT or SIGTERM it sends SIGTERM to every rank, kills those still running timeout_s + 5 s
/// later and says which signal stopped the run. Returns 0 if every rank succeeded, else 1.
/// Throws std::runtime_error when the store's port is taken, UserError when MASTER_PORT is not
/// a port.
int launch_local(const std::vector<std::string>& args, int world_size, double timeout_s);

/// Makes SIGINT and SIGTERM end this rank with exit code 1 and the line
/// "error: rank RANK: stopped by SIGNAL" on stderr.
void exit_on_stop_signals(int rank);

}  // namespace dtwin::rt
