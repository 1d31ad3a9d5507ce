// The defaults a scenario took, printed beside its prediction.
#pragma once

#include <string>

#include "models/spec/scenario.hpp"

namespace dtwin {

/// "defaults (keys the file leaves out; ...): key=value, ..." for the keys of
/// Scenario::defaulted whose default is not off (false, 0, 1, none, empty), wrapped at about 100
/// columns, each line after the first indented; "" when there are none.
/// Values as the scenario format writes them (base units: bytes/s, seconds, bytes, FLOP/s).
std::string defaults_report(const Scenario& scenario);

}  // namespace dtwin
