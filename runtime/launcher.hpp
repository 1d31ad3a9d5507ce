// The local launcher: one process per rank on this machine, like torchrun --standalone.
#pragma once

#include <string>
#include <vector>

namespace dtwin::rt {

/// Hosts the rendezvous store on a free 127.0.0.1 port (the store binds port 0) and starts
/// `world_size` copies of this executable with `args` and RANK, WORLD_SIZE, LOCAL_RANK,
/// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT set. If a rank fails (non-zero exit or signal) it
/// says which, gives the others timeout_s + 5 s to stop, then kills the rest. Returns 0 if every
/// rank succeeded, else 1.
int launch_local(const std::vector<std::string>& args, int world_size, double timeout_s);

}  // namespace dtwin::rt
