#include "cli/compare_job.hpp"

#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "base/file_writer.hpp"
#include "base/user_error.hpp"
#include "cli/output_dir.hpp"
#include "trace/timeline.hpp"

namespace dtwin {
namespace {

std::string read_input(const std::string& path) {
  std::optional<std::string> text = read_file(path);
  if (!text)
    throw UserError(path +
                    ": cannot open (run dtwin simulate and dtwin train "
                    "with -o to this folder first)");
  return std::move(*text);
}

// Reads and parses OUT/name; any failure becomes UserError("OUT/name: ...").
template <typename Parse>
auto load(const std::string& dir, const std::string& name, Parse parse) {
  const std::string path = dir + "/" + name;
  const std::string text = read_input(path);
  try {
    return parse(text);
  } catch (const std::exception& error) {
    throw UserError(path + ": " + error.what());
  }
}

}  // namespace

trace::Comparison compare_output_dir(const std::string& folder_path) {
  std::string dir = folder_path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (!std::filesystem::is_directory(dir)) throw UserError(dir + ": not a folder");
  const auto predicted = load(dir, "predicted.trace.json", trace::from_chrome_trace);
  const auto predicted_summary = load(dir, "predicted.summary.json", trace::from_summary_json);
  const auto measured = load(dir, "measured.trace.json", trace::from_chrome_trace);
  const auto measured_summary = load(dir, "measured.summary.json", trace::from_summary_json);

  trace::Comparison comparison;
  try {
    comparison =
        trace::compare_timelines(predicted, measured, &predicted_summary, &measured_summary);
  } catch (const UserError& error) {
    throw UserError(dir + ": the predicted and measured runs differ: " + error.what());
  }
  // The folder's own name (out/quickstart -> quickstart), also for "." and trailing slashes.
  std::filesystem::path folder = std::filesystem::absolute(dir).lexically_normal();
  if (folder.filename().empty()) folder = folder.parent_path();
  const std::string title = folder.filename().string();
  write_file(dir + "/compare.json", trace::to_compare_json(comparison));
  write_file(dir + "/report.md", trace::to_markdown_report(comparison, title));
  std::cout << trace::format_compare_table(comparison, "compare " + title) << "wrote " << dir
            << "/compare.json and report.md\n";
  return comparison;
}

}  // namespace dtwin
