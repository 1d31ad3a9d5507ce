// Where a command writes its files.
#pragma once

#include <string>

#include "models/spec/scenario.hpp"

namespace dtwin {

/// `requested` if given, else out/<scenario name>; created with its parents. Throws
/// std::runtime_error if it cannot be created.
std::string prepare_output_dir(const std::string& requested, const Scenario& scenario);

}  // namespace dtwin
