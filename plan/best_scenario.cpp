#include "plan/best_scenario.hpp"

#include <filesystem>

#include "models/spec/scenario_loader.hpp"

namespace dtwin {
namespace {

// cluster.device.model as a --set: an absolute path where the scenario names a device file by a
// relative path (taken from the scenario's folder, as load_device_description takes it); "" for
// a device name or none.
std::string device_model_set(const std::string& path, const std::string& model) {
  const std::filesystem::path file(model);
  const bool is_path = model.find('/') != std::string::npos || file.extension() == ".yaml";
  if (!is_path || file.is_absolute()) return "";
  const std::filesystem::path folder = std::filesystem::absolute(path).parent_path();
  return "cluster.device.model=" + (folder / file).lexically_normal().string();
}

}  // namespace

std::string best_scenario_yaml(const std::string& path, const std::vector<std::string>& overrides,
                               const LayoutCandidate& layout,
                               const std::vector<std::string>& header) {
  std::vector<std::string> sets = overrides;
  sets.insert(sets.end(), layout.sets.begin(), layout.sets.end());
  const DeviceSpec& device = layout.scenario.cluster.device;
  if (const std::string model = device_model_set(path, device.model); !model.empty())
    sets.push_back(model);
  if (!device.profile.empty()) sets.push_back("cluster.device.profile=\"\"");
  std::string text;
  for (const std::string& line : header) text += "# " + line + "\n";
  return text + scenario_with_overrides(path, sets);
}

}  // namespace dtwin
