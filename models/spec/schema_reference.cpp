#include "models/spec/schema_reference.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>
#include <nlohmann/json.hpp>

#include "base/user_error.hpp"
#include "models/spec/schema.hpp"

namespace dtwin {
namespace {

using nlohmann::ordered_json;

/// The kind of a key with its unit and range, e.g. "integer >= 1", "bytes/s ... > 0".
std::string kind_text(const FieldSpec& f) {
  switch (f.kind) {
    case FieldKind::Section:
      return "section";
    case FieldKind::Integer: {
      std::string text = fmt::format("integer >= {}", f.min);
      if (f.max > 0 && f.max != LLONG_MAX) text += fmt::format(", <= {}", f.max);
      return text;
    }
    case FieldKind::Quantity: {
      std::string text = quantity_description(f.quantity) + (f.positive ? "; > 0" : "; >= 0");
      if (f.quantity_min > 0) text += fmt::format(", >= {}", f.quantity_min);
      if (f.quantity_max > 0) text += fmt::format(", <= {}", f.quantity_max);
      return text;
    }
    case FieldKind::Boolean:
    case FieldKind::Choice:
      return fmt::format("{}", fmt::join(f.choices, " | "));
    case FieldKind::Text:
      return f.allow_empty ? "text" : "non-empty text";
    case FieldKind::IntList:
      return fmt::format("list of integers >= {}", f.min);
  }
  return "";
}

std::string default_text(const FieldSpec& f) {
  if (!f.required_unless.empty())
    return "required unless " + f.required_unless + " is given (then " + f.default_note + ")";
  if (f.required) return "required";
  if (!f.default_note.empty()) return f.default_note;
  if (f.kind == FieldKind::Section) return "optional";
  const std::string value = render_value(f.get(Scenario{}));
  return value.empty() ? "\"\"" : value;
}

/// "Megatron-LM: --x; torchtitan: y", or "".
std::string names_text(const FieldSpec& f) {
  std::vector<std::string> parts;
  if (!f.megatron.empty()) parts.push_back("Megatron-LM: " + f.megatron);
  if (!f.torchtitan.empty()) parts.push_back("torchtitan: " + f.torchtitan);
  return fmt::format("{}", fmt::join(parts, "; "));
}

bool under(const std::string& path, const std::string& section) {
  return section.empty() || path == section || path.rfind(section + ".", 0) == 0;
}

/// The JSON Schema of one key.
ordered_json field_schema(const FieldSpec& f) {
  ordered_json s;
  s["description"] = f.meaning;
  switch (f.kind) {
    case FieldKind::Section: {
      s["type"] = "object";
      ordered_json properties = ordered_json::object();
      std::vector<std::string> required;
      ordered_json all_of = ordered_json::array();
      for (const FieldSpec* child : section_fields(f.path)) {
        properties[child->name()] = field_schema(*child);
        if (child->required && child->required_unless.empty()) required.push_back(child->name());
        if (!child->required_if.empty()) {
          const std::string other = find_field(child->required_if)->name();
          all_of.push_back({{"if",
                             {{"properties", {{other, {{"minimum", child->required_from}}}}},
                              {"required", {other}}}},
                            {"then", {{"required", {child->name()}}}}});
        }
        if (!child->required_unless.empty()) {
          const std::string other = find_field(child->required_unless)->name();
          all_of.push_back({{"anyOf", ordered_json::array({{{"required", {other}}},
                                                           {{"required", {child->name()}}}})}});
        }
      }
      s["properties"] = properties;
      if (!required.empty()) s["required"] = required;
      if (!all_of.empty()) s["allOf"] = all_of;
      s["additionalProperties"] = false;
      break;
    }
    case FieldKind::Integer:
      s["type"] = "integer";
      s["minimum"] = f.min;
      s["maximum"] = f.max > 0 ? f.max : INT_MAX;
      break;
    case FieldKind::Quantity: {
      ordered_json number = {{"type", "number"}};
      number[f.positive ? "exclusiveMinimum" : "minimum"] = 0;
      // Plain numbers outside the plausible range need a unit (a size of 0 excepted); none may
      // leave the physical range.
      const PlainRange plausible = plausible_plain_range(f.quantity);
      double max = 0;
      for (double bound : {plausible.max, f.quantity_max, physical_range(f.quantity).max})
        if (bound > 0 && (max == 0 || bound < max)) max = bound;
      if (max > 0) number["maximum"] = max;
      if (f.quantity_min > 0) number["minimum"] = f.quantity_min;
      if (plausible.min > 0 && (f.positive || f.quantity != Quantity::Bytes))
        number["minimum"] = plausible.min;
      else if (plausible.min > 0)
        number["anyOf"] = ordered_json::array({{{"const", 0}}, {{"minimum", plausible.min}}});
      ordered_json alternatives = ordered_json::array({number});
      const std::vector<std::string> units = unit_names(f.quantity);
      // A number with an optional unit; for "> 0", not one whose digits are all zeros.
      std::string pattern = R"(^\s*\+?)";
      if (f.positive) pattern += R"((?!0*\.?0*([eE][+-]?\d+)?\s*[A-Za-z/]*\s*$))";
      pattern += R"((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)";
      if (!units.empty()) pattern += fmt::format(R"(\s*({})?)", fmt::join(units, "|"));
      pattern += R"(\s*$)";
      alternatives.push_back({{"type", "string"}, {"pattern", pattern}});
      s["anyOf"] = alternatives;
      break;
    }
    case FieldKind::Boolean:
      s["type"] = "boolean";
      break;
    case FieldKind::Choice:
      s["enum"] = f.choices;
      break;
    case FieldKind::Text:
      s["type"] = "string";
      if (!f.allow_empty) s["minLength"] = 1;
      break;
    case FieldKind::IntList:
      s["type"] = "array";
      s["items"] = {{"type", "integer"}, {"minimum", f.min}};
      break;
  }
  return s;
}

ordered_json json_value(const FieldValue& value) {
  return std::visit([](const auto& v) { return ordered_json(v); }, value);
}

}  // namespace

std::string keys_text(const std::string& section) {
  if (!section.empty()) {
    const FieldSpec* f = find_field(section);
    if (f == nullptr || f->kind != FieldKind::Section) {
      std::vector<std::string> sections;
      for (const FieldSpec& s : scenario_fields())
        if (s.kind == FieldKind::Section) sections.push_back(s.path);
      throw UserError(fmt::format("{}: expected one of {}", section, fmt::join(sections, ", ")));
    }
  }
  std::string out;
  for (const FieldSpec& f : scenario_fields()) {
    if (!under(f.path, section)) continue;
    out += fmt::format("{}  ({}; default: {})\n    {}\n", f.path, kind_text(f), default_text(f),
                       f.meaning);
    if (const std::string names = names_text(f); !names.empty()) out += "    " + names + "\n";
  }
  return out;
}

std::string keys_markdown() {
  std::string out =
      "# Scenario reference\n\n"
      "<!-- Generated by `dtwin keys --markdown` from models/spec/schema.cpp; a test keeps it "
      "equal. Do not edit by hand. -->\n\n"
      "Every key a scenario file may hold. Quantities take units (`25GB/s`, `200Gb/s`, `20us`, "
      "`24GiB`, `100GFLOP/s`); a plain number is in base units (bytes/s, seconds, bytes, "
      "FLOP/s). An optional key left out takes its default. `dtwin keys [SECTION]` prints this "
      "list, `dtwin keys --json-schema` a JSON Schema of the format for editors, and `dtwin keys "
      "--resolved SCENARIO` a scenario's values after loading. Rules that tie keys together "
      "(tp divides the heads, the layout fills the cluster, ...) are checked when a scenario "
      "loads and name the keys they involve.\n";
  for (const FieldSpec& top : scenario_fields()) {
    if (!top.parent().empty() || top.kind != FieldKind::Section) continue;
    out += fmt::format("\n## `{}`: {}\n\n", top.path, top.meaning);
    out += "| key | kind | default | meaning | Megatron-LM | torchtitan |\n";
    out += "|---|---|---|---|---|---|\n";
    for (const FieldSpec& f : scenario_fields()) {
      if (f.path == top.path || !under(f.path, top.path)) continue;
      out +=
          fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", f.path, kind_text(f), default_text(f),
                      f.meaning, f.megatron.empty() ? "" : "`" + f.megatron + "`",
                      f.torchtitan.empty() ? "" : "`" + f.torchtitan + "`");
    }
  }
  out += "\n## Top-level keys\n\n| key | kind | default | meaning |\n|---|---|---|---|\n";
  for (const FieldSpec& f : scenario_fields())
    if (f.parent().empty())
      out += fmt::format("| `{}` | {} | {} | {} |\n", f.path, kind_text(f), default_text(f),
                         f.meaning);
  return out;
}

std::string keys_json_schema() {
  FieldSpec root;
  root.kind = FieldKind::Section;
  root.meaning =
      "A dtwin scenario: the model, the parallel layout, the training settings, the "
      "cluster and the runtime of one job.";
  ordered_json schema;
  schema["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  schema["title"] = "dtwin scenario";
  schema.update(field_schema(root));
  return schema.dump(2) + "\n";
}

std::string resolved_json(const Scenario& scenario) {
  ordered_json out;
  out["source"] = scenario.source;
  out["world_size"] = scenario.world_size();
  for (const FieldSpec& f : scenario_fields()) {
    if (f.kind == FieldKind::Section) continue;
    std::string pointer = "/" + f.path;  // keys hold no '/' or '~'
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    out[ordered_json::json_pointer(pointer)] = json_value(f.get(scenario));
  }
  return out.dump(2) + "\n";
}

}  // namespace dtwin
