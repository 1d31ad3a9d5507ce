#include "base/file_writer.hpp"

#include <fcntl.h>
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
  const auto fail = [&](int error) {
    std::error_code ec;
    fs::remove(temp, ec);
    throw std::runtime_error(path.string() + ": cannot write: " + std::strerror(error));
  };
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(errno);
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      fail(error);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    fail(error);
  }
  if (::close(fd) != 0) fail(errno);
  commit_file(temp, path);
  // The rename is durable once the folder's entry is on disk.
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

}  // namespace dtwin
