#include "runtime/checkpoint.hpp"

#include <filesystem>
#include <stdexcept>

namespace dtwin::rt {
namespace {

namespace fs = std::filesystem;

fs::path step_dir(const std::string& output_dir, int64_t steps_done) {
  return fs::path(output_dir) / "checkpoints" / ("step-" + std::to_string(steps_done));
}

std::string stage_file(int stage, const char* suffix) {
  return "stage-" + std::to_string(stage) + suffix;
}

template <typename T>
void save_atomically(const T& object, const fs::path& path) {
  const fs::path temporary = path.string() + ".tmp";
  torch::save(object, temporary.string());
  fs::rename(temporary, path);
}

}  // namespace

void save_checkpoint(const std::string& output_dir, int64_t steps_done,
                     std::map<int, StageState>& stages) {
  const fs::path dir = step_dir(output_dir, steps_done);
  fs::create_directories(dir);
  for (auto& [stage, state] : stages) {
    save_atomically(state.module, dir / stage_file(stage, ".pt"));
    save_atomically(*state.optimizer, dir / stage_file(stage, ".optim.pt"));
  }
}

std::optional<int64_t> latest_checkpoint(const std::string& output_dir, int num_stages) {
  const fs::path root = fs::path(output_dir) / "checkpoints";
  if (!fs::is_directory(root)) return std::nullopt;
  std::optional<int64_t> latest;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step-", 0) != 0) continue;
    const int64_t steps = std::stoll(name.substr(5));
    bool complete = true;
    for (int s = 0; s < num_stages; ++s)
      complete = complete && fs::exists(entry.path() / stage_file(s, ".pt")) &&
                 fs::exists(entry.path() / stage_file(s, ".optim.pt"));
    if (complete && (!latest || steps > *latest)) latest = steps;
  }
  return latest;
}

void load_checkpoint(const std::string& output_dir, int64_t steps_done,
                     std::map<int, StageState>& stages) {
  const fs::path dir = step_dir(output_dir, steps_done);
  for (auto& [stage, state] : stages) {
    const fs::path module = dir / stage_file(stage, ".pt");
    const fs::path optimizer = dir / stage_file(stage, ".optim.pt");
    try {
      torch::load(state.module, module.string());
      torch::load(*state.optimizer, optimizer.string());
    } catch (const std::exception& e) {
      throw std::runtime_error(module.string() + ": cannot load checkpoint: " + e.what());
    }
  }
}

}  // namespace dtwin::rt
