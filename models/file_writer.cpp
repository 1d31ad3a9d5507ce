#include "models/file_writer.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace dtwin {

namespace fs = std::filesystem;
namespace {

// A fresh path next to `target` (same folder, so that the rename is atomic):
// ".<name>.tmp.<pid>.<counter>".
fs::path temp_path_for(const fs::path& target) {
  static std::atomic<unsigned> counter{0};
  return target.parent_path() / ("." + target.filename().string() + ".tmp." +
                                 std::to_string(::getpid()) + "." + std::to_string(counter++));
}

// Replaces `target` by `temp` with rename(2); removes `temp` and throws when that fails.
void commit_file(const fs::path& temp, const fs::path& target) {
  std::error_code ec;
  fs::rename(temp, target, ec);
  if (ec) {
    fs::remove(temp, ec);
    throw std::runtime_error("cannot rename " + temp.string() + " to " + target.string() + ": " +
                             ec.message());
  }
}

}  // namespace

void write_file(const fs::path& path, std::string_view bytes) {
  const fs::path temp = temp_path_for(path);
  std::ofstream out(temp, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    const int error = errno;
    std::error_code ec;
    fs::remove(temp, ec);
    throw std::runtime_error(path.string() + ": cannot write: " + std::strerror(error));
  }
  commit_file(temp, path);
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

}  // namespace dtwin
