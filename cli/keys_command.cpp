// `dtwin keys`: the scenario format's reference, JSON Schema and a scenario's resolved values,
// all generated from the schema (models/spec/schema.hpp).
#include <iostream>

#include "base/user_error.hpp"
#include "cli/commands.hpp"
#include "models/spec/schema_reference.hpp"

namespace dtwin {
namespace {

struct KeysOptions {
  std::string section;  // "" = every key
  bool json_schema = false;
  bool markdown = false;
  std::string resolved;  // a scenario file, or ""
  std::vector<std::string> overrides;
};

int run_keys(const KeysOptions& options) {
  const int forms =
      int(options.json_schema) + int(options.markdown) + int(!options.resolved.empty());
  if (forms > 1 || (forms == 1 && !options.section.empty()))
    throw UserError(
        "keys: expected at most one of SECTION, --json-schema, --markdown and --resolved");
  if (!options.overrides.empty() && options.resolved.empty())
    throw UserError("keys: --set applies to --resolved SCENARIO only");
  if (options.json_schema) {
    std::cout << keys_json_schema();
  } else if (options.markdown) {
    std::cout << keys_markdown();
  } else if (!options.resolved.empty()) {
    std::cout << resolved_json(ScenarioOptions{options.resolved, options.overrides}.load());
  } else {
    std::cout << keys_text(options.section);
  }
  return 0;
}

}  // namespace

void add_keys_command(CLI::App& app, int& exit_code) {
  auto [cmd, options] = add_guarded_command<KeysOptions>(
      app, exit_code, "keys",
      "List the scenario keys (with their kind, unit, default and meaning), or print the JSON "
      "Schema, the Markdown reference or a scenario's resolved values",
      run_keys);
  cmd->add_option("section", options->section,
                  "Only the keys under this section (model, layout, training, cluster, "
                  "cluster.device, runtime, ...)");
  cmd->add_flag("--json-schema", options->json_schema,
                "Print a JSON Schema of the scenario format (for YAML editors and checkers)");
  cmd->add_flag("--markdown", options->markdown,
                "Print the reference as Markdown (docs/scenario-reference.md)");
  cmd->add_option("--resolved", options->resolved,
                  "Print SCENARIO's values after loading (defaults applied, base units) as JSON");
  cmd->add_option("--set", options->overrides,
                  "Override a key of the --resolved scenario (repeatable)");
}

}  // namespace dtwin
