#include "cli/output_dir.hpp"

#include <filesystem>
#include <stdexcept>

namespace dtwin {

std::string prepare_output_dir(const std::string& requested, const Scenario& scenario) {
  const std::string dir = requested.empty() ? "out/" + scenario.name : requested;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw std::runtime_error(dir + ": cannot create output directory: " + error.message());
  return dir;
}

}  // namespace dtwin
