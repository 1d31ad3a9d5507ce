// What `dtwin keys` prints, all derived from the schema (models/spec/schema.hpp): the reference
// of the keys (text for the terminal, Markdown for docs/scenario-reference.md), a JSON Schema of
// the scenario format for YAML editors and checkers, and a scenario's resolved values as JSON.
#pragma once

#include <string>

#include "models/spec/scenario.hpp"

namespace dtwin {

/// The keys under `section` ("" = all; "layout", "cluster.device", ...) as plain text: per key
/// its path, kind with unit and range, default, meaning and Megatron-LM / torchtitan names.
/// Throws UserError "SECTION: expected one of ..." when no section has that path.
std::string keys_text(const std::string& section);

/// docs/scenario-reference.md: every key in one table per top-level section.
std::string keys_markdown();

/// A JSON Schema (draft 2020-12) of the scenario format: maps with their keys (required ones
/// required, others refused), integers with their ranges, choices as enums, quantities as a
/// number or a string with one of the unit's suffixes. It checks shape only: rules that tie keys
/// together (validate.hpp) are not in it.
std::string keys_json_schema();

/// Every key's value in `scenario` after loading (defaults applied, quantities in base units,
/// a device description's peak and memory filled in), as a JSON object nested by section, plus
/// "source" and "world_size" (ranks).
std::string resolved_json(const Scenario& scenario);

}  // namespace dtwin
