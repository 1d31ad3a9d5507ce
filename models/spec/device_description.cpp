#include "models/spec/device_description.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "base/file_writer.hpp"
#include "base/install_paths.hpp"
#include "models/spec/config_reader.hpp"

namespace dtwin {

using detail::expected;
using detail::Field;
using detail::Origin;
using detail::Section;

namespace fs = std::filesystem;

namespace {

/// A number in (0, 1].
double fraction(const Section& s, const std::string& key) {
  const double value = s.quantity(key, Quantity::Count, true);
  if (value > 1) expected(s.origin(), s.get(key), "a fraction in (0, 1]");
  return value;
}

/// The folder of the shipped device descriptions: installed, or models/devices in the source.
std::string devices_dir() {
  return shared_folder("devices", DTWIN_DEVICES_DIR);
}

/// The device names that the devices directory has: its .yaml files without the extension,
/// sorted.
std::vector<std::string> known_devices() {
  std::vector<std::string> names;
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator(devices_dir(), ignored)) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// The file `name_or_path` names (see load_device_description).
std::string device_file(const std::string& name_or_path, const std::string& relative_to) {
  const bool bare =
      name_or_path.find('/') == std::string::npos && fs::path(name_or_path).extension() != ".yaml";
  if (!bare) {
    const fs::path path(name_or_path);
    return path.is_absolute() ? path.string()
                              : (fs::path(relative_to).parent_path() / path).string();
  }
  const fs::path file = fs::path(devices_dir()) / (name_or_path + ".yaml");
  if (!fs::is_regular_file(file)) {
    throw ConfigError(fmt::format(
        "unknown device '{}': expected one of {} (the files of {}) or a path to a device file",
        name_or_path, fmt::join(known_devices(), ", "), devices_dir()));
  }
  return file.string();
}

}  // namespace

double DeviceDescription::peak_flops(Precision precision) const {
  if (precision == Precision::Fp8) return fp8_flops;
  if (precision == Precision::Bf16) return bf16_flops;
  if (precision == Precision::Fp32) return fp32_flops;
  throw std::logic_error("peak_flops: a precision without a peak");
}

double element_bytes(Precision precision) {
  if (precision == Precision::Fp8) return 1;
  if (precision == Precision::Bf16) return 2;
  if (precision == Precision::Fp32) return 4;
  throw std::logic_error("element_bytes: a precision without a size");
}

DeviceDescription load_device_description(const std::string& name_or_path,
                                          const std::string& relative_to) {
  const std::string path = device_file(name_or_path, relative_to);
  const YAML::Node doc = detail::load_yaml_file(path, "device");
  const Origin origin(path, {}, "device");
  const Section root(
      origin, Field{doc, "", doc.Mark()},
      {"name", "bf16_flops", "fp8_flops", "fp32_flops", "sm_count", "memory_bandwidth", "memory",
       "gemm_tile", "gemm_efficiency", "attention_forward_efficiency",
       "attention_backward_efficiency", "attention_causal_speedup", "memory_efficiency",
       "kernel_overhead", "host_op_overhead", "host_op_overhead_no_grad", "overlap_slowdown",
       "reserved_memory", "allocator_fragmentation"});
  DeviceDescription d;
  d.source = path;
  d.name = root.text("name", false);
  d.bf16_flops = root.quantity("bf16_flops", Quantity::FlopRate, true);
  root.quantity("fp8_flops", Quantity::FlopRate, true, d.fp8_flops);
  d.fp32_flops = root.quantity("fp32_flops", Quantity::FlopRate, true);
  d.sm_count = root.integer("sm_count", 1);
  d.memory_bandwidth = root.quantity("memory_bandwidth", Quantity::Bandwidth, true);
  d.memory = root.quantity("memory", Quantity::Bytes, true);
  const Section tile = root.section("gemm_tile", {"m", "n"});
  d.tile_m = tile.integer("m", 1);
  d.tile_n = tile.integer("n", 1);
  d.gemm_efficiency = fraction(root, "gemm_efficiency");
  d.attention_forward_efficiency = fraction(root, "attention_forward_efficiency");
  d.attention_backward_efficiency = fraction(root, "attention_backward_efficiency");
  root.quantity("attention_causal_speedup", Quantity::Count, true, d.attention_causal_speedup);
  if (d.attention_causal_speedup < 1 || d.attention_causal_speedup > 2)
    expected(origin, root.get("attention_causal_speedup"),
             "a factor in [1, 2] (a causal mask skips at most half the blocks)");
  d.memory_efficiency = fraction(root, "memory_efficiency");
  d.kernel_overhead = root.quantity("kernel_overhead", Quantity::Latency, false);
  d.host_op_overhead = root.quantity("host_op_overhead", Quantity::Latency, false);
  d.host_op_overhead_no_grad = root.quantity("host_op_overhead_no_grad", Quantity::Latency, false);
  d.overlap_slowdown = root.quantity("overlap_slowdown", Quantity::Count, true);
  if (d.overlap_slowdown < 1) expected(origin, root.get("overlap_slowdown"), "a factor >= 1");
  d.reserved_memory = root.quantity("reserved_memory", Quantity::Bytes, false);
  d.allocator_fragmentation = root.quantity("allocator_fragmentation", Quantity::Count, false);
  if (d.allocator_fragmentation >= 1)
    expected(origin, root.get("allocator_fragmentation"), "a fraction in [0, 1)");
  return d;
}

void save_device_description(const DeviceDescription& device, const std::string& path,
                             const std::string& comment) {
  const auto number = [](double value) { return fmt::format("{}", value); };
  YAML::Emitter out;
  out << YAML::Comment(comment);
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << device.name;
  out << YAML::Key << "bf16_flops" << YAML::Value << number(device.bf16_flops);
  if (device.has_fp8()) out << YAML::Key << "fp8_flops" << YAML::Value << number(device.fp8_flops);
  out << YAML::Key << "fp32_flops" << YAML::Value << number(device.fp32_flops);
  out << YAML::Key << "sm_count" << YAML::Value << device.sm_count;
  out << YAML::Key << "memory_bandwidth" << YAML::Value << number(device.memory_bandwidth);
  out << YAML::Key << "memory" << YAML::Value << number(device.memory);
  out << YAML::Key << "gemm_tile" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "m" << YAML::Value << device.tile_m;
  out << YAML::Key << "n" << YAML::Value << device.tile_n << YAML::EndMap;
  out << YAML::Key << "gemm_efficiency" << YAML::Value << number(device.gemm_efficiency);
  out << YAML::Key << "attention_forward_efficiency" << YAML::Value
      << number(device.attention_forward_efficiency);
  out << YAML::Key << "attention_backward_efficiency" << YAML::Value
      << number(device.attention_backward_efficiency);
  out << YAML::Key << "attention_causal_speedup" << YAML::Value
      << number(device.attention_causal_speedup);
  out << YAML::Key << "memory_efficiency" << YAML::Value << number(device.memory_efficiency);
  out << YAML::Key << "kernel_overhead" << YAML::Value << number(device.kernel_overhead);
  out << YAML::Key << "host_op_overhead" << YAML::Value << number(device.host_op_overhead);
  out << YAML::Key << "host_op_overhead_no_grad" << YAML::Value
      << number(device.host_op_overhead_no_grad);
  out << YAML::Key << "overlap_slowdown" << YAML::Value << number(device.overlap_slowdown);
  out << YAML::Key << "reserved_memory" << YAML::Value << number(device.reserved_memory);
  out << YAML::Key << "allocator_fragmentation" << YAML::Value
      << number(device.allocator_fragmentation);
  out << YAML::EndMap;
  write_file(path, std::string(out.c_str()) + "\n");
}

}  // namespace dtwin
