#include "runtime/data/file_util.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace dtwin::rt::data {

namespace fs = std::filesystem;

FileLock::FileLock(const fs::path& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::runtime_error("cannot open lock file " + path.string() + ": " +
                             std::strerror(errno));
  }
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    ::close(fd_);
    throw std::runtime_error("cannot lock " + path.string() + ": " + std::strerror(err));
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

bool up_to_date(const fs::path& path, std::initializer_list<fs::path> inputs) {
  std::error_code ec;
  auto t = fs::last_write_time(path, ec);
  if (ec) return false;
  for (const auto& input : inputs) {
    auto ti = fs::last_write_time(input, ec);
    if (ec || ti > t) return false;
  }
  return true;
}

}  // namespace dtwin::rt::data
