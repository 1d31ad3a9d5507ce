#include "models/spec/config_reader.hpp"

#include <fmt/format.h>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "base/closest_name.hpp"
#include "base/config_error.hpp"

namespace dtwin::detail {
namespace {

/// True if `path` is `key` or lies below it ("a.b" is under "a"; so is "a[0]").
bool is_under(const std::string& path, const std::string& key) {
  if (path.size() < key.size() || path.compare(0, key.size(), key) != 0) return false;
  return path.size() == key.size() || path[key.size()] == '.' || path[key.size()] == '[';
}

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

/// The field of a map entry: an empty value is reported at its key.
Field entry(const Field& map, const YAML::Node& key, const YAML::Node& value) {
  return Field{value, join(map.path, key.Scalar()), value.IsNull() ? key.Mark() : value.Mark()};
}

}  // namespace

const Override* Origin::override_of(const std::string& path) const {
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it) {
    if (is_under(path, it->key)) return &*it;
  }
  return nullptr;
}

std::string Origin::locate(const std::string& path, const YAML::Mark& mark) const {
  if (const Override* o = override_of(path)) return "--set " + o->text;
  if (!mark.is_null()) return fmt::format("{}:{}:{}", file_, mark.line + 1, mark.column + 1);
  // A map that an override created has no position: blame the override that created it.
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it) {
    if (path.empty() || is_under(it->key, path)) return "--set " + it->text;
  }
  return file_;
}

void Origin::fail(const std::string& path, const YAML::Mark& mark, const std::string& what) const {
  const std::string key = path.empty() ? root_ : path;
  throw ConfigError(fmt::format("{}: {}: {}", locate(path, mark), key, what));
}

namespace {

/// Sets `node` and everything under it to flow style (a node keeps the style it was parsed in,
/// which overrides the emitter's YAML::Flow).
void set_flow(YAML::Node node) {
  node.SetStyle(YAML::EmitterStyle::Flow);
  if (node.IsSequence()) {
    for (YAML::Node item : node) set_flow(item);
  } else if (node.IsMap()) {
    for (auto pair : node) set_flow(pair.second);
  }
}

}  // namespace

YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in || std::filesystem::is_directory(path)) {
    throw ConfigError(path + ": cannot open " + what + " file");
  }
  try {
    return YAML::Load(in);
  } catch (const YAML::Exception& e) {  // ParserException: a syntax error at e.mark
    throw ConfigError(
        fmt::format("{}:{}:{}: invalid YAML: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

std::string render(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "";
  if (node.IsScalar()) return node.Scalar();
  const YAML::Node copy = YAML::Clone(node);
  set_flow(copy);
  YAML::Emitter out;
  out << YAML::Flow << copy;
  std::string text = out.c_str();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

void expected(const Origin& origin, const Field& field, const std::string& what) {
  origin.fail(field.path, field.mark,
              fmt::format("expected {}, got '{}'", what, render(field.node)));
}

long long to_integer(const Origin& origin, const Field& field, long long min, long long max,
                     const std::string& what) {
  const std::string wanted =
      !what.empty() ? what : (min > 0 ? "a positive integer" : "a non-negative integer");
  long long value = 0;
  if (!field.node.IsScalar()) expected(origin, field, wanted);
  try {
    value = field.node.as<long long>();
  } catch (const YAML::BadConversion&) {
    expected(origin, field, wanted);
  }
  if (value < min || value > max) expected(origin, field, wanted);
  return value;
}

int to_int(const Origin& origin, const Field& field, int min) {
  return static_cast<int>(to_integer(origin, field, min, INT_MAX));
}

double to_quantity(const Origin& origin, const Field& field, Quantity kind, bool positive) {
  if (!field.node.IsScalar()) expected(origin, field, quantity_description(kind));
  double value = 0;
  try {
    value = parse_quantity(field.node.Scalar(), kind);
  } catch (const UserError&) {
    expected(origin, field, quantity_description(kind));
  }
  if (positive ? !(value > 0) : !(value >= 0)) {
    expected(origin, field, quantity_bound(kind, positive));
  }
  return value;
}

std::string to_choice(const Origin& origin, const Field& field,
                      const std::vector<std::string>& options) {
  if (field.node.IsScalar()) {
    for (const auto& option : options) {
      if (field.node.Scalar() == option) return option;
    }
  }
  expected(origin, field, fmt::format("one of {}", fmt::join(options, ", ")));
}

std::vector<int> to_int_list(const Origin& origin, const Field& field, int min) {
  const std::string what = min > 0 ? "a list of positive integers" : "a list of integers >= 0";
  if (!field.node.IsSequence()) expected(origin, field, what);
  std::vector<int> values;
  for (std::size_t i = 0; i < field.node.size(); ++i) {
    const YAML::Node item = field.node[i];
    const Field item_field{item, fmt::format("{}[{}]", field.path, i),
                           item.IsNull() ? field.mark : item.Mark()};
    values.push_back(to_int(origin, item_field, min));
  }
  return values;
}

const Field& blame(const Origin& origin, const std::vector<const Field*>& fields) {
  const Field* first = nullptr;
  for (const Field* f : fields) {
    if (f == nullptr) continue;
    if (origin.override_of(f->path) != nullptr) return *f;
    if (first == nullptr) first = f;
  }
  if (first == nullptr) throw std::logic_error("blame() needs at least one field");
  return *first;
}

Section::Section(const Origin& origin, Field field, std::vector<std::string> keys)
    : origin_(&origin), field_(std::move(field)) {
  if (!field_.node.IsMap()) expected(origin, field_, "a map");
  std::vector<YAML::Node> seen;
  for (const auto& pair : field_.node) {
    const YAML::Node key = pair.first;
    const std::string path = join(field_.path, key.IsScalar() ? key.Scalar() : render(key));
    bool known = false;
    for (const auto& k : keys) known = known || (key.IsScalar() && key.Scalar() == k);
    if (!known) {
      const auto near = key.IsScalar() ? closest_name(key.Scalar(), keys) : std::nullopt;
      origin.fail(path, key.Mark(),
                  fmt::format("unknown key{} (expected one of: {})",
                              near ? "; did you mean " + *near + "?" : "", fmt::join(keys, ", ")));
    }
    for (const auto& prev : seen) {
      if (prev.Scalar() == key.Scalar()) {
        origin.fail(path, key.Mark(),
                    fmt::format("duplicate key (first given at line {})", prev.Mark().line + 1));
      }
    }
    seen.push_back(key);
  }
}

std::optional<Field> Section::find(const std::string& key) const {
  for (const auto& pair : field_.node) {
    if (pair.first.Scalar() == key) return entry(field_, pair.first, pair.second);
  }
  return std::nullopt;
}

Field Section::get(const std::string& key) const {
  if (auto f = find(key)) return *f;
  origin_->fail(join(field_.path, key), field_.mark, "missing key");
}

Section Section::section(const std::string& key, std::vector<std::string> keys) const {
  return Section(*origin_, get(key), std::move(keys));
}

std::optional<Section> Section::optional_section(const std::string& key,
                                                 std::vector<std::string> keys) const {
  if (auto f = find(key)) return Section(*origin_, *f, std::move(keys));
  return std::nullopt;
}

int Section::integer(const std::string& key, int min) const {
  return to_int(*origin_, get(key), min);
}

void Section::integer(const std::string& key, int min, int& out) const {
  if (auto f = find(key)) out = to_int(*origin_, *f, min);
}

double Section::quantity(const std::string& key, Quantity kind, bool positive) const {
  return to_quantity(*origin_, get(key), kind, positive);
}

void Section::quantity(const std::string& key, Quantity kind, bool positive, double& out) const {
  if (auto f = find(key)) out = to_quantity(*origin_, *f, kind, positive);
}

void Section::boolean(const std::string& key, bool& out) const {
  if (auto f = find(key)) out = to_choice(*origin_, *f, {"false", "true"}) == "true";
}

std::string Section::text(const std::string& key, bool allow_empty) const {
  const Field f = get(key);
  if (!f.node.IsScalar() || (!allow_empty && f.node.Scalar().empty())) {
    expected(*origin_, f, allow_empty ? "a string" : "a non-empty string");
  }
  return f.node.Scalar();
}

void Section::text(const std::string& key, bool allow_empty, std::string& out) const {
  if (find(key)) out = text(key, allow_empty);
}

}  // namespace dtwin::detail
