// A scenario being assembled by an importer (`dtwin import`): the scenario keys with where each
// came from, the source's fields that no key holds, and the notes on approximations; written as
// a commented scenario YAML.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "models/spec/scenario.hpp"

namespace dtwin::import {

/// The scenario keys an importer sets, each with its origin: the source field it maps
/// ("hidden_size"), or "default: WHY" where the source says nothing. Keys given with --set are set
/// first and locked: an importer's later set() of them is ignored, so that the user's value wins
/// and the importer's derived choices (the data-parallel degree from the cluster's size, ...) read
/// it.
class ScenarioDraft {
 public:
  /// `command` names the importer ("hf", "megatron", "torchtitan"); `source` is the file read
  /// (or a description of an inline argument list).
  ScenarioDraft(std::string command, std::string source);

  /// Sets and locks each "key.path=value" (the value parsed as YAML). Throws UserError naming the
  /// override when the key is not a scenario key or the value does not parse.
  void apply_overrides(const std::vector<std::string>& overrides);

  /// Sets scenario key `path` (a key of models/spec/schema.cpp) to `value` unless --set locked
  /// it; `origin` is written as the key's comment. Returns whether the value was taken.
  bool set(const std::string& path, const YAML::Node& value, const std::string& origin);
  bool set(const std::string& path, long long value, const std::string& origin);
  bool set(const std::string& path, int value, const std::string& origin) {
    return set(path, static_cast<long long>(value), origin);
  }
  bool set(const std::string& path, bool value, const std::string& origin);
  bool set(const std::string& path, double value, const std::string& origin);
  bool set(const std::string& path, const std::string& value, const std::string& origin);
  bool set(const std::string& path, const char* value, const std::string& origin) {
    return set(path, std::string(value), origin);
  }
  /// Sets `path` as set() does, only where it holds no value yet.
  bool set_default(const std::string& path, const std::string& value, const std::string& origin) {
    return !has(path) && set(path, value, origin);
  }
  /// Removes `path` unless --set locked it.
  void erase(const std::string& path);

  /// Whether `path` holds a value.
  bool has(const std::string& path) const { return values_.count(path) > 0; }
  /// Whether --set gave `path`.
  bool locked(const std::string& path) const { return locked_.count(path) > 0; }
  /// The value at `path` as text ("" when absent).
  std::string text(const std::string& path) const;
  /// The value at `path` as an integer; `fallback` when absent. Throws UserError when the value
  /// (from --set) is not an integer.
  long long integer(const std::string& path, long long fallback) const;
  /// The value at `path` as a Boolean; `fallback` when absent.
  bool boolean(const std::string& path, bool fallback) const;

  /// Records a source field that no scenario key holds, with what was dropped ("" = nothing to
  /// add). Listed in the header and on stderr as "unsupported: ...".
  void unsupported(const std::string& field, const std::string& why = "");
  /// Records a note on how a field was mapped or approximated, for the header and stderr.
  void note(const std::string& text);
  /// Sets the top-level `name` unless --set gave it: `raw` reduced to letters, digits, '.', '_'
  /// and '-' (others become '-'), lower case.
  void name(const std::string& raw, const std::string& origin);

  /// The source fields recorded as unsupported, in the order they were recorded.
  const std::vector<std::string>& unsupported_fields() const { return unsupported_; }
  /// The notes, in order.
  const std::vector<std::string>& notes() const { return notes_; }

  /// The scenario: a header comment (the importer, the source, the unsupported fields and the
  /// notes), then the keys in the schema's order, each commented with its origin.
  std::string yaml() const;
  /// What stderr says: "import: unsupported: A, B", a line "import:   A: WHY" for each field with a
  /// reason, then "import: note: ..." for each note.
  std::string report() const;
  /// The scenario as load_scenario reads yaml() (through a temporary file). Throws UserError
  /// "the imported scenario does not load: ..." naming the key at fault.
  Scenario load() const;

 private:
  struct Entry {
    YAML::Node value;
    std::string origin;
  };
  void emit_section(YAML::Emitter& out, const std::string& section) const;
  bool section_used(const std::string& section) const;

  std::string command_;
  std::string source_;
  std::map<std::string, Entry> values_;
  std::set<std::string> locked_;
  std::vector<std::string> unsupported_;
  std::vector<std::string> unsupported_why_;
  std::vector<std::string> notes_;
};

/// The default hardware of an imported scenario where the source names none: `nodes` DGX-H100-like
/// nodes of 8 H100-SXM GPUs (models/devices/h100-sxm.yaml), NVLink 4 inside a node (450 GB/s,
/// 3 us), 8 x 400 Gb/s InfiniBand per node (5 us), a star network; the runtime section for NCCL
/// on CUDA. Keys already set (by --set or the source) stay.
void set_default_cluster(ScenarioDraft& draft, long long nodes);

/// The world size the draft's cluster holds: nodes · devices_per_node · ranks_per_device.
long long cluster_world(const ScenarioDraft& draft);

/// Tracks which fields of a source (JSON keys, TOML keys, command-line options) an importer has
/// mapped, so that the rest can be reported as unsupported, in source order.
class SourceFields {
 public:
  /// Adds a field the source holds (in source order; a repeated name is kept once).
  void add(const std::string& field);
  /// Marks `field` as mapped (or deliberately consumed).
  void use(const std::string& field) { used_.insert(field); }
  /// Marks `field`, if the source holds it, as read but not representable: report_unused lists it
  /// with `why` (what the scenario simulates instead).
  void reject(const std::string& field, const std::string& why);
  /// Whether the source holds `field`.
  bool contains(const std::string& field) const { return present_.count(field) > 0; }
  /// Records every field not marked used as unsupported in `draft`, in source order, with the
  /// reason reject() gave.
  void report_unused(ScenarioDraft& draft) const;

 private:
  std::vector<std::string> order_;
  std::set<std::string> present_;
  std::set<std::string> used_;
  std::map<std::string, std::string> why_;
};

}  // namespace dtwin::import
