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
