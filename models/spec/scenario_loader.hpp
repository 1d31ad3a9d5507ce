// Reads a scenario YAML file (see scenarios/quickstart.yaml) into a checked dtwin::Scenario.
#pragma once

#include <string>
#include <vector>

#include "base/config_error.hpp"
#include "models/spec/scenario.hpp"
#include "models/spec/size_guard.hpp"

namespace dtwin {

/// Loads the scenario at `path`, applies `overrides` (each "key.path=value" as given to the
/// CLI's repeatable --set; the value is parsed as YAML, e.g. "8", "[2, 4]" or "{a: 1}"; missing
/// intermediate maps are created), then checks every key, type, unit and cross-field rule.
/// Quantities are returned in base units (bytes/s, seconds, bytes, FLOP/s); Scenario::source is
/// `path`. A layout whose lowered schedule would take more than `memory_budget_bytes` to simulate
/// (size_guard.hpp; default: 80% of this machine's memory) is refused too. Throws ConfigError on
/// the first problem found.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {},
                       double memory_budget_bytes = machine_memory_budget());

/// The scenario file at `path` with `overrides` applied as load_scenario applies them, emitted
/// again as YAML text (block style): every key kept in its order, comments dropped. Not checked
/// against the schema; throws ConfigError as load_scenario does for an unreadable file, invalid
/// YAML or a malformed override, and when the file is not a map.
std::string scenario_with_overrides(const std::string& path,
                                    const std::vector<std::string>& overrides);

}  // namespace dtwin
