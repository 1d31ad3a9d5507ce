// Internal to models/: checked reading of a YAML document for scenario_loader.cpp and
// profile.cpp. Knows where each node came from (file position or --set override) so that every
// error names its place.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "models/spec/units.hpp"

namespace dtwin::detail {

/// One `--set key.path=value` override: its dotted key and the text as the user typed it.
struct Override {
  std::string key;
  std::string text;
};

/// Where the document came from: the file name and the overrides applied to it. `root` names
/// the whole document in messages about it ("scenario", "profile").
class Origin {
 public:
  Origin(std::string file, std::vector<Override> overrides, std::string root = "scenario")
      : file_(std::move(file)), overrides_(std::move(overrides)), root_(std::move(root)) {}

  /// The override that set `path` or one of its parents, if any.
  const Override* override_of(const std::string& path) const;
  /// Message prefix for a problem at `path`: "--set k=v", "FILE:LINE:COL" (1-based) or "FILE".
  std::string locate(const std::string& path, const YAML::Mark& mark) const;
  /// Throws ConfigError("PREFIX: PATH: what").
  [[noreturn]] void fail(const std::string& path, const YAML::Mark& mark,
                         const std::string& what) const;

 private:
  std::string file_;
  std::vector<Override> overrides_;
  std::string root_;
};

/// A value in the document: its node, dotted path ("cluster.device.memory", "a.b[2]") and the
/// position errors about it point at (its key's where the value itself is empty).
struct Field {
  YAML::Node node;
  std::string path;
  YAML::Mark mark;
};

/// A value as quoted in messages: the scalar text, or flow style for a sequence or map.
std::string render(const YAML::Node& node);

/// Parses the YAML file at `path`. Throws ConfigError "PATH: cannot open WHAT file" when it
/// cannot be read, or "PATH:LINE:COL: invalid YAML: ..." on a syntax error.
YAML::Node load_yaml_file(const std::string& path, const std::string& what);

/// Throws ConfigError "PREFIX: PATH: expected WHAT, got 'VALUE'".
[[noreturn]] void expected(const Origin& origin, const Field& field, const std::string& what);

/// A whole number in [min, max]; `what` describes it for errors (default: "a positive integer"
/// or "a non-negative integer" from `min`).
long long to_integer(const Origin& origin, const Field& field, long long min, long long max,
                     const std::string& what = "");
/// A positive (min 1) or non-negative (min 0) int.
int to_int(const Origin& origin, const Field& field, int min);
/// A quantity in base units (see parse_quantity); `positive` demands > 0, otherwise >= 0.
double to_quantity(const Origin& origin, const Field& field, Quantity kind, bool positive);
/// A scalar that is one of `options`.
std::string to_choice(const Origin& origin, const Field& field,
                      const std::vector<std::string>& options);
/// A sequence of ints >= min.
std::vector<int> to_int_list(const Origin& origin, const Field& field, int min);
/// Of `fields` (null entries skipped), the first one set by an override, else the first one:
/// where to report a rule that ties several values together.
const Field& blame(const Origin& origin, const std::vector<const Field*>& fields);

/// A map whose keys are all known. Required readers throw "missing key"; optional readers leave
/// `out` (the struct's default) alone when the key is absent.
class Section {
 public:
  /// Checks that `field` is a map with no duplicate key and no key outside `keys`.
  Section(const Origin& origin, Field field, std::vector<std::string> keys);

  const Origin& origin() const { return *origin_; }
  const Field& field() const { return field_; }
  std::optional<Field> find(const std::string& key) const;
  Field get(const std::string& key) const;

  Section section(const std::string& key, std::vector<std::string> keys) const;
  std::optional<Section> optional_section(const std::string& key,
                                          std::vector<std::string> keys) const;

  int integer(const std::string& key, int min) const;
  void integer(const std::string& key, int min, int& out) const;
  double quantity(const std::string& key, Quantity kind, bool positive) const;
  void quantity(const std::string& key, Quantity kind, bool positive, double& out) const;
  /// An optional `true` or `false` (exactly those words); absent leaves `out` alone.
  void boolean(const std::string& key, bool& out) const;
  /// A scalar as text; `allow_empty` = false demands a non-empty string.
  std::string text(const std::string& key, bool allow_empty) const;
  void text(const std::string& key, bool allow_empty, std::string& out) const;

 private:
  const Origin* origin_;
  Field field_;
};

}  // namespace dtwin::detail
