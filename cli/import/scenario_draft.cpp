#include "cli/import/scenario_draft.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "base/file_writer.hpp"
#include "base/user_error.hpp"
#include "models/spec/scenario_loader.hpp"
#include "models/spec/schema.hpp"

namespace dtwin::import {
namespace {

/// `text` cut into lines of at most `width` characters at spaces, each line after the first
/// started with `indent`.
std::vector<std::string> wrap(const std::string& text, std::size_t width,
                              const std::string& indent) {
  std::vector<std::string> lines(1);
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    std::string& line = lines.back();
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(indent + word);
    } else {
      line += (line.empty() ? "" : " ") + word;
    }
  }
  return lines;
}

/// Appends `text` to `out` as comment lines "# ..." of at most 100 characters, the first indented
/// by `indent` spaces, the others by two more.
void comment(std::string& out, const std::string& text, std::size_t indent = 0) {
  const std::string pad(indent, ' ');
  for (const std::string& line : wrap(text, 98 - indent, "  ")) out += "# " + pad + line + "\n";
}

const FieldSpec& key_spec(const std::string& path) {
  const FieldSpec* field = find_field(path);
  if (field == nullptr || field->kind == FieldKind::Section)
    throw std::logic_error("ScenarioDraft: '" + path + "' is not a scenario key");
  return *field;
}

}  // namespace

ScenarioDraft::ScenarioDraft(std::string command, std::string source)
    : command_(std::move(command)), source_(std::move(source)) {}

void ScenarioDraft::apply_overrides(const std::vector<std::string>& overrides) {
  for (const std::string& text : overrides) {
    const auto eq = text.find('=');
    const std::string key = eq == std::string::npos ? "" : text.substr(0, eq);
    const FieldSpec* field = find_field(key);
    if (field == nullptr)
      throw UserError(
          fmt::format("--set {}: expected KEY=VALUE with a scenario key (dtwin keys), "
                      "got '{}'",
                      text, key));
    if (field->kind == FieldKind::Section)
      throw UserError(fmt::format(
          "--set {}: {} is a section: expected one of its keys (dtwin keys {})", text, key, key));
    YAML::Node value;
    try {
      value = YAML::Load(text.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      throw UserError(fmt::format("--set {}: {}: expected a YAML value ({})", text, key, e.msg));
    }
    if (value.IsSequence()) value.SetStyle(YAML::EmitterStyle::Flow);
    values_[key] = Entry{value, "--set"};
    locked_.insert(key);
  }
}

bool ScenarioDraft::set(const std::string& path, const YAML::Node& value,
                        const std::string& origin) {
  key_spec(path);
  if (locked(path)) return false;
  YAML::Node copy = YAML::Clone(value);
  if (copy.IsSequence()) copy.SetStyle(YAML::EmitterStyle::Flow);
  values_[path] = Entry{copy, origin};
  return true;
}

bool ScenarioDraft::set(const std::string& path, long long value, const std::string& origin) {
  return set(path, YAML::Node(value), origin);
}

bool ScenarioDraft::set(const std::string& path, bool value, const std::string& origin) {
  return set(path, YAML::Node(value ? "true" : "false"), origin);
}

bool ScenarioDraft::set(const std::string& path, double value, const std::string& origin) {
  return set(path, YAML::Node(fmt::format("{}", value)), origin);
}

bool ScenarioDraft::set(const std::string& path, const std::string& value,
                        const std::string& origin) {
  return set(path, YAML::Node(value), origin);
}

void ScenarioDraft::erase(const std::string& path) {
  if (!locked(path)) values_.erase(path);
}

std::string ScenarioDraft::text(const std::string& path) const {
  const auto it = values_.find(path);
  if (it == values_.end() || !it->second.value.IsScalar()) return "";
  return it->second.value.Scalar();
}

long long ScenarioDraft::integer(const std::string& path, long long fallback) const {
  const auto it = values_.find(path);
  if (it == values_.end()) return fallback;
  try {
    return it->second.value.as<long long>();
  } catch (const YAML::Exception&) {
    throw UserError(
        fmt::format("{}: {}: expected an integer, got '{}'", it->second.origin, path, text(path)));
  }
}

bool ScenarioDraft::boolean(const std::string& path, bool fallback) const {
  const std::string value = text(path);
  return value.empty() ? fallback : value == "true";
}

void ScenarioDraft::unsupported(const std::string& field, const std::string& why) {
  for (const std::string& known : unsupported_)
    if (known == field) return;
  unsupported_.push_back(field);
  unsupported_why_.push_back(why);
}

void ScenarioDraft::note(const std::string& text) {
  notes_.push_back(text);
}

void ScenarioDraft::name(const std::string& raw, const std::string& origin) {
  std::string name;
  for (const char c : raw) {
    const bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    name += keep ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : '-';
  }
  set("name", name.empty() ? std::string("imported") : name, origin);
}

bool ScenarioDraft::section_used(const std::string& section) const {
  const std::string prefix = section + ".";
  for (const auto& [path, entry] : values_)
    if (path.compare(0, prefix.size(), prefix) == 0) return true;
  return false;
}

void ScenarioDraft::emit_section(YAML::Emitter& out, const std::string& section) const {
  for (const FieldSpec* field : section_fields(section)) {
    if (field->kind == FieldKind::Section) {
      if (!section_used(field->path)) continue;
      out << YAML::Key << field->name() << YAML::Value << YAML::BeginMap;
      emit_section(out, field->path);
      out << YAML::EndMap;
      continue;
    }
    const auto it = values_.find(field->path);
    if (it == values_.end()) continue;
    out << YAML::Key << field->name() << YAML::Value << it->second.value;
    if (!it->second.origin.empty()) out << YAML::Comment(it->second.origin);
  }
}

std::string ScenarioDraft::yaml() const {
  std::string header;
  comment(header, fmt::format("Imported by `dtwin import {}` from {}.", command_, source_));
  comment(header,
          "Each key's comment names the source field it holds; \"default\" marks dtwin's choice "
          "where the source says nothing (change it with --set KEY=VALUE; `dtwin plan` searches "
          "layouts).");
  if (unsupported_.empty()) {
    comment(header, "unsupported: none (every source field is mapped)");
  } else {
    std::string list;
    for (const std::string& field : unsupported_) list += (list.empty() ? "" : ", ") + field;
    comment(header, "unsupported (source fields no scenario key holds): " + list);
    for (std::size_t i = 0; i < unsupported_.size(); ++i)
      if (!unsupported_why_[i].empty())
        comment(header, unsupported_[i] + ": " + unsupported_why_[i], 2);
  }
  for (const std::string& text : notes_) comment(header, "note: " + text);
  YAML::Emitter out;
  out << YAML::BeginMap;
  emit_section(out, "");
  out << YAML::EndMap;
  return header + out.c_str() + "\n";
}

std::string ScenarioDraft::report() const {
  std::string out;
  if (!unsupported_.empty())
    out += "import: unsupported: " + fmt::format("{}", fmt::join(unsupported_, ", ")) + "\n";
  for (std::size_t i = 0; i < unsupported_.size(); ++i)
    if (!unsupported_why_[i].empty())
      out += "import:   " + unsupported_[i] + ": " + unsupported_why_[i] + "\n";
  for (const std::string& text : notes_) out += "import: note: " + text + "\n";
  return out;
}

Scenario ScenarioDraft::load() const {
  std::string scratch =
      (std::filesystem::temp_directory_path() / "dtwin-import-XXXXXX.yaml").string();
  const int fd = mkstemps(scratch.data(), 5);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file " + scratch);
  close(fd);
  const auto remove = [&] {
    std::error_code ignored;
    std::filesystem::remove(scratch, ignored);
  };
  try {
    write_file(scratch, yaml());
    Scenario scenario = load_scenario(scratch);
    remove();
    return scenario;
  } catch (const UserError& e) {
    remove();
    std::string message = e.what();
    for (std::size_t at; (at = message.find(scratch)) != std::string::npos;)
      message.replace(at, scratch.size(), "<imported scenario>");
    throw UserError("the imported scenario does not load: " + message +
                    " (change the key with --set KEY=VALUE)");
  } catch (...) {
    remove();
    throw;
  }
}

void set_default_cluster(ScenarioDraft& draft, long long nodes) {
  draft.set_default("cluster.nodes", std::to_string(nodes), "default");
  draft.set_default("cluster.devices_per_node", "8", "default: DGX H100-like nodes");
  draft.set_default("cluster.device.kind", "gpu", "default");
  draft.set_default("cluster.device.model", "h100-sxm", "default: models/devices/h100-sxm.yaml");
  draft.set_default("cluster.intra_node.bandwidth", "450GB/s",
                    "default: NVLink 4 through NVSwitch");
  draft.set_default("cluster.intra_node.latency", "3us", "default");
  draft.set_default("cluster.inter_node.bandwidth", "3200Gb/s",
                    "default: 8 x 400 Gb/s InfiniBand NDR");
  draft.set_default("cluster.inter_node.latency", "5us", "default");
  draft.set_default("cluster.topology", "star", "default");
  draft.set_default("runtime.backend", "nccl", "default");
  draft.set_default("runtime.device", "cuda", "default");
}

long long cluster_world(const ScenarioDraft& draft) {
  return draft.integer("cluster.nodes", 1) * draft.integer("cluster.devices_per_node", 1) *
         draft.integer("cluster.ranks_per_device", 1);
}

void SourceFields::add(const std::string& field) {
  if (present_.insert(field).second) order_.push_back(field);
}

void SourceFields::reject(const std::string& field, const std::string& why) {
  if (!contains(field)) return;
  used_.erase(field);
  why_[field] = why;
}

void SourceFields::report_unused(ScenarioDraft& draft) const {
  for (const std::string& field : order_) {
    if (used_.count(field)) continue;
    const auto why = why_.find(field);
    draft.unsupported(field, why == why_.end() ? "" : why->second);
  }
}

}  // namespace dtwin::import
