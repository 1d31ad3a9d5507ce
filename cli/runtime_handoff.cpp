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

bool needs_runtime(int argc, char** argv) {
  if (argc < 2) return false;
  const std::string_view command = argv[1];
  if (std::ranges::any_of(kRuntimeCommands,
                          [command](const CommandEntry& c) { return c.name == command; }))
    return true;
  return command == "plan" && std::any_of(argv + 2, argv + argc, [](const char* arg) {
           return std::string_view(arg) == "--run" || std::string_view(arg).starts_with("--run=");
         });
}

std::string beside_this_executable(std::string_view name) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return (self.parent_path() / name).string();
}

int exec_runtime(char** argv) {
  const std::string path = beside_this_executable(kRuntimeExecutable);
  argv[0] = const_cast<char*>(path.c_str());
  execv(path.c_str(), argv);
  std::cerr << "error: cannot start " << path << ": " << std::strerror(errno) << "\n";
  return 1;
}

}  // namespace dtwin
