#include "cli/runtime_handoff.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "cli/runtime_commands.hpp"

namespace dtwin {

bool is_runtime_command(std::string_view name) {
  return std::ranges::any_of(kRuntimeCommands,
                             [name](const CommandEntry& c) { return c.name == name; });
}

int exec_runtime(char** argv) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::string path = (self.parent_path() / kRuntimeExecutable).string();
  argv[0] = const_cast<char*>(path.c_str());
  execv(path.c_str(), argv);
  std::cerr << "error: cannot start " << path << ": " << std::strerror(errno) << "\n";
  return 1;
}

}  // namespace dtwin
