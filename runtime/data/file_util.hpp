// File helpers for caches that several ranks may build at once: an exclusive lock file and
// "write to a temporary file, then rename" so that no reader ever sees a half-written file.
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

/// A fresh path next to `target` (same directory, so that a rename is atomic) for a temporary
/// file: ".<name>.tmp.<pid>.<counter>".
std::filesystem::path temp_path_for(const std::filesystem::path& target);

/// Atomically replaces `target` by `temp` (rename(2) within one file system).
void commit_file(const std::filesystem::path& temp, const std::filesystem::path& target);

/// Writes `bytes` to a temporary file next to `target`, then renames it onto `target`.
void write_file_atomically(const std::filesystem::path& target, const std::string& bytes);

/// True when `path` exists and was modified no earlier than each of `inputs`.
bool up_to_date(const std::filesystem::path& path,
                std::initializer_list<std::filesystem::path> inputs);

}  // namespace dtwin::rt::data
