#include "cli/output_dir.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace dtwin {

std::string prepare_output_dir(const std::string& requested, const Scenario& scenario) {
  const std::string dir = requested.empty() ? "out/" + scenario.name : requested;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw std::runtime_error(dir + ": cannot create output directory: " + error.message());
  return dir;
}

void write_text_file(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error(path + ": cannot write");
}

}  // namespace dtwin
