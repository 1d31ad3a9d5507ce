#include "cli/defaults_report.hpp"

#include <vector>

#include "models/spec/schema.hpp"

namespace dtwin {
namespace {

/// A value that turns a feature off (false, 0, 1, none, an empty name or list: a degree of 1
/// is no parallelism of that kind): not an assumption
/// about the run worth a line.
bool is_off(const std::string& value) {
  return value == "false" || value == "0" || value == "1" || value == "none" || value.empty() ||
         value == "[]";
}

}  // namespace

std::string defaults_report(const Scenario& scenario) {
  if (scenario.defaulted.empty()) return "";
  constexpr size_t kWidth = 100;
  std::vector<std::string> items;
  for (const std::string& key : scenario.defaulted) {
    const FieldSpec* field = find_field(key);
    if (!field || field->kind == FieldKind::Section) continue;
    const std::string value = render_value(field->get(scenario));
    if (!is_off(value)) items.push_back(key + "=" + value);
  }
  if (items.empty()) return "";
  std::string out = "defaults (keys the file leaves out; features left out are off):";
  size_t line_start = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string item = " " + items[i] + (i + 1 < items.size() ? "," : "");
    if (out.size() - line_start + item.size() > kWidth) {
      out += "\n ";
      line_start = out.size() - 1;
    }
    out += item;
  }
  return out + "\n";
}

}  // namespace dtwin
