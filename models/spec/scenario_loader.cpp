#include "models/spec/scenario_loader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <map>

#include "models/spec/config_reader.hpp"
#include "models/spec/schema.hpp"
#include "models/spec/size_guard.hpp"
#include "models/spec/validate.hpp"

namespace dtwin {

using detail::blame;
using detail::expected;
using detail::Field;
using detail::Origin;
using detail::Override;
using detail::Section;

namespace {

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t dot; (dot = key.find('.', start)) != std::string::npos; start = dot + 1) {
    parts.push_back(key.substr(start, dot - start));
  }
  parts.push_back(key.substr(start));
  return parts;
}

/// Applies one "key.path=value" to the map `root` (creating missing maps); returns it as an
/// Override.
Override apply_override(YAML::Node& root, const std::string& text) {
  const auto bad = [&](const std::string& what) {
    return ConfigError(fmt::format("--set {}: {}", text, what));
  };
  const auto eq = text.find('=');
  const std::string key =
      eq == std::string::npos ? "" : std::string(trim(std::string_view(text).substr(0, eq)));
  const std::vector<std::string> parts = split_key(key);
  for (const auto& part : parts) {
    if (part.empty()) throw bad("expected key.path=value, e.g. --set layout.microbatches=8");
  }
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw bad(
        fmt::format("{}: expected a YAML value ({}), got '{}'", key, e.msg, text.substr(eq + 1)));
  }
  YAML::Node node = root;
  std::string path;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    path += (i ? "." : "") + parts[i];
    YAML::Node child = node[parts[i]];
    if (!child.IsDefined() || child.IsNull()) child = YAML::Node(YAML::NodeType::Map);
    if (!child.IsMap()) {
      throw bad(fmt::format("{}: expected a map to hold '{}', got '{}'", path, parts[i + 1],
                            detail::render(child)));
    }
    node.reset(child);  // rebind (plain assignment would overwrite the parent's value)
  }
  node[parts.back()] = value;
  return Override{key, text};
}

/// A scalar of an Integer, Quantity, Boolean, Choice, Text or IntList key, parsed as `field`
/// says and checked against its range.
FieldValue read_value(const Origin& origin, const Field& node, const FieldSpec& field) {
  FieldValue value;
  switch (field.kind) {
    case FieldKind::Integer: {
      value = detail::to_integer(origin, node, LLONG_MIN, LLONG_MAX, expected_text(field));
      break;
    }
    case FieldKind::Quantity: {
      value = detail::to_quantity(origin, node, field.quantity, field.positive);
      // A scenario's quantities are written by hand: a plain number far from any real link,
      // latency, peak or memory is a missing unit (profiles and device files are not checked).
      const std::string implausible = implausible_without_unit(node.node.Scalar(), field.quantity);
      if (!implausible.empty()) expected(origin, node, implausible);
      break;
    }
    case FieldKind::Boolean:
      value = detail::to_choice(origin, node, field.choices) == "true";
      break;
    case FieldKind::Choice:
      value = detail::to_choice(origin, node, field.choices);
      break;
    case FieldKind::Text:
      if (!node.node.IsScalar()) expected(origin, node, expected_text(field));
      value = node.node.Scalar();
      break;
    case FieldKind::IntList:
      value = detail::to_int_list(origin, node, static_cast<int>(field.min));
      break;
    case FieldKind::Section:
      break;
  }
  const std::string error = range_error(field, value);
  if (!error.empty()) expected(origin, node, error);
  return value;
}

/// Reads the section `field` (the schema's section at `path`) into `sc`, recording each key the
/// document holds in `present`.
void read_section(const Origin& origin, const Field& field, const std::string& path, Scenario& sc,
                  std::map<std::string, Field>& present) {
  const std::vector<const FieldSpec*> keys = section_fields(path);
  std::vector<std::string> names;
  for (const FieldSpec* key : keys) names.push_back(key->name());
  const Section section(origin, field, names);
  for (const FieldSpec* key : keys) {
    const std::optional<Field> node = section.find(key->name());
    if (!node) {
      const bool excused = !key->required_unless.empty() && present.count(key->required_unless);
      if (key->required && !excused) section.get(key->name());  // throws "missing key"
      continue;
    }
    present.emplace(key->path, *node);
    if (key->kind == FieldKind::Section) {
      read_section(origin, *node, key->path, sc, present);
    } else {
      key->set(sc, read_value(origin, *node, *key));
    }
  }
}

/// Whether the file gives the section that holds `field` (always, for a top-level key).
bool section_given(const FieldSpec& field, const std::map<std::string, Field>& present) {
  return field.parent().empty() || present.count(field.parent()) > 0;
}

/// Throws "missing key" for an optional key left out where its required_if holds.
void check_conditionally_required(const Origin& origin, const Field& root,
                                  const std::map<std::string, Field>& present, const Scenario& sc) {
  for (const FieldSpec& field : scenario_fields()) {
    if (field.required_if.empty() || present.count(field.path) || !section_given(field, present))
      continue;
    const FieldSpec* other = find_field(field.required_if);
    if (std::get<long long>(other->get(sc)) < field.required_from) continue;
    const auto parent = present.find(field.parent());
    origin.fail(
        field.path, parent == present.end() ? root.mark : parent->second.mark,
        fmt::format("missing key (required when {} >= {})", other->name(), field.required_from));
  }
}

/// Fills the values that keys left out take from other keys: precision bf16 and flash attention
/// on a GPU device (fp32 and eager, the Scenario defaults, on a CPU), microbatches from
/// global_batch, the inter-node link (unused on one node) from the intra-node one; and
/// sc.defaulted: the keys left out of a section the file gives, and those whose value was
/// derived here wherever they sit.
void apply_defaults(const std::map<std::string, Field>& present, Scenario& sc) {
  const bool gpu = sc.cluster.device.kind == DeviceKind::Gpu;
  if (gpu && !present.count("training.precision")) sc.training.precision = Precision::Bf16;
  if (gpu && !present.count("model.attention")) sc.model.attention = Attention::Flash;
  LayoutSpec& l = sc.layout;
  if (present.count("layout.global_batch") && !present.count("layout.microbatches"))
    l.microbatches = std::max(1, l.global_batch / std::max(1, l.micro_batch_size * l.dp));
  if (!present.count("cluster.inter_node")) sc.cluster.inter_node = sc.cluster.intra_node;
  static const Scenario blank;
  for (const FieldSpec& field : scenario_fields()) {
    const bool derived = field.kind != FieldKind::Section && field.get(sc) != field.get(blank);
    if (!present.count(field.path) && (section_given(field, present) || derived))
      sc.defaulted.push_back(field.path);
  }
}

/// Loads the device description that cluster.device.model names; its peak (at the training
/// precision's storage type: bf16 under fp8) and memory stand in for keys the file does not give.
void read_device_description(const Origin& origin, const std::map<std::string, Field>& present,
                             Scenario& sc) {
  DeviceSpec& dev = sc.cluster.device;
  const auto model = present.find("cluster.device.model");
  if (model == present.end()) return;
  try {
    dev.description = load_device_description(dev.model, sc.source);
  } catch (const ConfigError& error) {
    origin.fail(model->second.path, model->second.mark, error.what());
  }
  if (!present.count("cluster.device.peak_flops"))
    dev.peak_flops = dev.description->peak_flops(storage_precision(sc.training.precision));
  if (!present.count("cluster.device.memory")) dev.memory = dev.description->memory;
}

/// Throws the first violation of validate(), else of size_violation with `budget_bytes`, at the
/// place of the key to blame.
void check_rules(const Origin& origin, const Field& root,
                 const std::map<std::string, Field>& present, const Scenario& sc,
                 double budget_bytes) {
  std::vector<Violation> violations = validate(sc);
  if (violations.empty())
    if (auto too_large = size_violation(sc, budget_bytes)) violations.push_back(*too_large);
  if (violations.empty()) return;
  const Violation& v = violations.front();
  std::vector<const Field*> fields;
  for (const std::string& key : v.keys) {
    const auto it = present.find(key);
    fields.push_back(it == present.end() ? nullptr : &it->second);
  }
  if (std::all_of(fields.begin(), fields.end(), [](const Field* f) { return f == nullptr; }))
    origin.fail(v.keys.front(), root.mark, "expected " + v.expected);
  expected(origin, blame(origin, fields), v.expected);
}

}  // namespace

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides,
                       double memory_budget_bytes) {
  YAML::Node doc = detail::load_yaml_file(path, "scenario");
  std::vector<Override> applied;
  if (!overrides.empty() && doc.IsNull()) doc = YAML::Node(YAML::NodeType::Map);  // empty file
  if (doc.IsMap()) {  // otherwise the root check below reports the file
    for (const auto& text : overrides) applied.push_back(apply_override(doc, text));
  }
  const Origin origin(path, std::move(applied));

  Scenario sc;
  sc.source = path;
  const Field root{doc, "", doc.Mark()};
  std::map<std::string, Field> present;
  read_section(origin, root, "", sc, present);
  check_conditionally_required(origin, root, present, sc);
  apply_defaults(present, sc);
  read_device_description(origin, present, sc);
  check_rules(origin, root, present, sc, memory_budget_bytes);
  return sc;
}

std::string scenario_with_overrides(const std::string& path,
                                    const std::vector<std::string>& overrides) {
  YAML::Node doc = detail::load_yaml_file(path, "scenario");
  if (doc.IsNull()) doc = YAML::Node(YAML::NodeType::Map);
  if (!doc.IsMap()) throw ConfigError(path + ": expected a map of scenario sections");
  for (const auto& text : overrides) apply_override(doc, text);
  YAML::Emitter out;
  out << doc;
  return std::string(out.c_str()) + "\n";
}

}  // namespace dtwin
