#include "runtime/spawn_self.hpp"

#include <unistd.h>  // environ (a GNU extension, declared under _GNU_SOURCE)

#include <algorithm>
#include <stdexcept>

namespace dtwin::rt {
namespace {

std::string name_of(const std::string& entry) {
  return entry.substr(0, entry.find('='));
}

}  // namespace

pid_t spawn_self(const std::vector<std::string>& args, const std::vector<std::string>& extra_env,
                 const posix_spawn_file_actions_t* actions, const std::string& what) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const bool replaced = std::any_of(extra_env.begin(), extra_env.end(), [&](const auto& extra) {
      return name_of(extra) == name_of(entry);
    });
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<std::string> argv_strings{"/proc/self/exe"};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], actions, nullptr, argv.data(), envp.data()) != 0)
    throw std::runtime_error("cannot start " + what);
  return pid;
}

}  // namespace dtwin::rt
