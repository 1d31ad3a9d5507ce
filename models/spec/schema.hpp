// The scenario schema: every key a scenario file may hold, declared once, in one table. The
// table drives the YAML loader (scenario_loader.hpp), the structural checks of validate()
// (validate.hpp), `dtwin keys` (the reference, the JSON Schema and a scenario's resolved values)
// and docs/scenario-reference.md, which is generated from it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "models/spec/scenario.hpp"
#include "models/spec/units.hpp"

namespace dtwin {

/// A key's value in typed form: bool (Boolean), long long (Integer), double (Quantity, in base
/// units), std::string (Choice, Text), std::vector<int> (IntList).
using FieldValue = std::variant<bool, long long, double, std::string, std::vector<int>>;

/// What a key holds.
enum class FieldKind {
  Section,   ///< a map of keys
  Integer,   ///< a whole number in [min, max]
  Quantity,  ///< a number with an optional unit of `quantity`, read into base units
  Boolean,   ///< exactly `true` or `false`
  Choice,    ///< one of `choices`
  Text,      ///< a string
  IntList,   ///< a sequence of whole numbers >= min
};

/// One key of the scenario format.
struct FieldSpec {
  std::string path;  ///< dotted key path, e.g. "layout.tp"
  FieldKind kind = FieldKind::Section;
  /// Required in its section. An optional key without a value in the file keeps the default of
  /// a default-constructed Scenario (`get` of Scenario{}).
  bool required = false;
  /// For a key required unless another key is given: that key's path ("" = none).
  std::string required_unless;
  /// For an optional key required only where an integer key of its section is at least
  /// required_from (layout.schedule where pp >= 2): that key's path ("" = none), checked once
  /// the whole file is read.
  std::string required_if;
  long long required_from = 0;
  Quantity quantity = Quantity::Count;  ///< Quantity: the unit family
  long long min = 0;                    ///< Integer and IntList: the smallest value
  long long max = 0;                    ///< Integer: the largest value (0 = INT_MAX)
  bool positive = true;                 ///< Quantity: > 0 (true) or >= 0 (false)
  double quantity_min = 0;              ///< Quantity: the smallest value, inclusive (0 = none)
  double quantity_max = 0;              ///< Quantity: the largest value, inclusive (0 = none)
  std::vector<std::string> choices;     ///< Choice: the names, in the order messages list them
  bool allow_empty = false;             ///< Text: whether "" is a value
  /// What a valid value is, as the error says it ("expected WHAT, got ..."), where the kind's
  /// wording ("a positive integer", "a bandwidth > 0", ...) would not say the range.
  std::string what;
  std::string meaning;  ///< one line: what the key sets, with its unit
  /// The default where it is not a fixed value ("" = from Scenario{}); with required_unless,
  /// what the other key supplies.
  std::string default_note;
  std::string megatron;    ///< the Megatron-LM argument that sets the same thing, if any
  std::string torchtitan;  ///< the torchtitan TOML key that sets the same thing, if any
  /// The key's value in a scenario (not for sections).
  std::function<FieldValue(const Scenario&)> get;
  /// Stores a value of the key's kind in a scenario (not for sections).
  std::function<void(Scenario&, const FieldValue&)> set;

  /// The section that holds the key ("" for top-level keys).
  std::string parent() const;
  /// The last part of the path: the key as the file spells it.
  std::string name() const;
};

/// Every key of the scenario format, each section before the keys inside it, in the order the
/// format lists them (and error messages list a section's keys).
const std::vector<FieldSpec>& scenario_fields();

/// The key at `path`, or nullptr.
const FieldSpec* find_field(std::string_view path);

/// The keys directly inside the section at `path` ("" = the top level), in table order.
std::vector<const FieldSpec*> section_fields(std::string_view path);

/// `value` as the scenario format writes it: numbers in base units in their shortest exact
/// form, true/false, names, "[1, 2]" for lists.
std::string render_value(const FieldValue& value);

/// "" when `value` (of the field's kind) is within the field's range, else what is expected
/// ("a positive integer", "a fraction in (0, 1]", "one of gloo, nccl", ...).
std::string range_error(const FieldSpec& field, const FieldValue& value);

/// What a valid value of `field` is, as messages say it ("a positive integer", "one of ...").
std::string expected_text(const FieldSpec& field);

}  // namespace dtwin
