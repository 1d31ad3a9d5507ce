#include "runtime/checkpoint.hpp"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "base/file_writer.hpp"
#include "runtime/error_text.hpp"
#include "runtime/fault_injection.hpp"

namespace dtwin::rt {
namespace {

namespace fs = std::filesystem;

fs::path step_dir(const std::string& output_dir, int64_t steps_done) {
  return fs::path(output_dir) / "checkpoints" / ("step-" + std::to_string(steps_done));
}

// "stage-<s>" + suffix, with ".tp-<i>" before the suffix for member i when tp > 1.
std::string stage_file(int stage, const char* suffix, int tp_index, int tp) {
  const std::string member = tp > 1 ? ".tp-" + std::to_string(tp_index) : "";
  return "stage-" + std::to_string(stage) + member + suffix;
}

uint32_t crc32_of(const std::string& bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t done = 0; done < bytes.size();) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(bytes.size() - done, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + done), chunk);
    done += chunk;
  }
  return static_cast<uint32_t>(crc);
}

template <typename T>
std::string serialized(const T& object) {
  std::ostringstream out;
  torch::save(object, out);
  return std::move(out).str();
}

// Why the file `name` in `dir` does not match its manifest `entry`, or "" when it does.
std::string mismatch(const fs::path& dir, const std::string& name, const nlohmann::json& entry) {
  const std::optional<std::string> bytes = read_file(dir / name);
  if (!bytes) return "missing";
  const auto expected_size = entry.at("bytes").get<uint64_t>();
  if (bytes->size() != expected_size)
    return std::to_string(bytes->size()) + " bytes, the manifest says " +
           std::to_string(expected_size) + " (truncated?)";
  if (crc32_of(*bytes) != entry.at("crc32").get<uint32_t>())
    return "CRC-32 differs from the manifest's (corrupt)";
  return "";
}

// Why the checkpoint in `dir` cannot be resumed from ("FILE: why"), or "" when it is complete.
std::string verify(const fs::path& dir, int num_stages, int tp) {
  for (int s = 0; s < num_stages * tp; ++s) {
    const fs::path manifest_path = dir / stage_file(s / tp, ".manifest.json", s % tp, tp);
    const std::optional<std::string> text = read_file(manifest_path);
    if (!text) return manifest_path.string() + ": missing (the write was interrupted)";
    try {
      const nlohmann::json manifest = nlohmann::json::parse(*text);
      for (const auto& [name, entry] : manifest.at("files").items()) {
        const std::string why = mismatch(dir, name, entry);
        if (!why.empty()) return (dir / name).string() + ": " + why;
      }
    } catch (const nlohmann::json::exception& e) {
      return manifest_path.string() + ": unreadable manifest (" + e.what() + ")";
    }
  }
  return "";
}

}  // namespace

void save_checkpoint(const std::string& output_dir, int64_t steps_done,
                     std::map<int, StageState>& stages, int tp_index, int tp) {
  const fs::path dir = step_dir(output_dir, steps_done);
  fs::create_directories(dir);
  for (auto& [stage, state] : stages) {
    nlohmann::json files = nlohmann::json::object();
    const std::pair<std::string, std::string> parts[] = {
        {stage_file(stage, ".pt", tp_index, tp), serialized(state.module)},
        {stage_file(stage, ".optim.pt", tp_index, tp), serialized(state.current_optimizer())}};
    for (const auto& [name, bytes] : parts) {
      write_file(dir / name, bytes);
      files[name] = {{"bytes", bytes.size()}, {"crc32", crc32_of(bytes)}};
      inject_fault("checkpoint", steps_done);
    }
    const nlohmann::json manifest = {
        {"steps_done", steps_done}, {"stage", stage}, {"files", files}};
    write_file(dir / stage_file(stage, ".manifest.json", tp_index, tp), manifest.dump(2) + "\n");
  }
}

CheckpointChoice latest_checkpoint(const std::string& output_dir, int num_stages, int tp) {
  CheckpointChoice choice;
  const fs::path root = fs::path(output_dir) / "checkpoints";
  if (!fs::is_directory(root)) return choice;
  std::vector<std::pair<int64_t, fs::path>> steps;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step-", 0) != 0 || name.size() == 5 ||
        name.find_first_not_of("0123456789", 5) != std::string::npos || name.size() > 23)
      continue;
    steps.emplace_back(std::stoll(name.substr(5)), entry.path());
  }
  std::sort(steps.rbegin(), steps.rend());
  for (const auto& [steps_done, dir] : steps) {
    const std::string why = verify(dir, num_stages, tp);
    if (why.empty()) {
      choice.steps_done = steps_done;
      choice.directory = dir.string();
      return choice;
    }
    choice.skipped.push_back(why);
  }
  return choice;
}

void load_checkpoint(const std::string& output_dir, int64_t steps_done,
                     std::map<int, StageState>& stages, int tp_index, int tp) {
  const fs::path dir = step_dir(output_dir, steps_done);
  for (auto& [stage, state] : stages) {
    const fs::path module = dir / stage_file(stage, ".pt", tp_index, tp);
    const fs::path optimizer = dir / stage_file(stage, ".optim.pt", tp_index, tp);
    try {
      // Onto the device the stage lives on, whichever device wrote the checkpoint.
      const torch::Device device = state.module->parameters().front().device();
      torch::load(state.module, module.string(), device);
      torch::load(state.current_optimizer(), optimizer.string(), device);
    } catch (const std::exception& e) {
      throw std::runtime_error(module.string() + ": cannot load checkpoint: " + error_text(e));
    }
  }
}

}  // namespace dtwin::rt
