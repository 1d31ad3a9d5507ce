// File helpers for caches that several ranks may build at once: an exclusive lock file and a
// freshness check (whole files are written with base/file_writer.hpp).
#pragma once

#include <filesystem>
#include <string>

namespace dtwin::rt::data {

/// Holds an exclusive flock(2) on `path` (created if missing) until destruction. Blocks while
/// another process holds it. The lock is released by the kernel if the process dies.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

/// True when `path` exists and was modified no earlier than each of `inputs`.
bool up_to_date(const std::filesystem::path& path,
                std::initializer_list<std::filesystem::path> inputs);

}  // namespace dtwin::rt::data
