// Writing a file whole: through a temporary file next to it and a rename(2), so that no reader,
// and no crash, ever sees half a file. Every file dtwin writes in one piece goes through here.
#pragma once

#include <filesystem>
#include <string_view>

namespace dtwin {

/// Writes `bytes` to `path` (replacing it) via a temporary file in the same folder and an atomic
/// rename. Throws std::runtime_error "PATH: cannot write: REASON" when the folder is missing or
/// not writable, or the disk is full; the temporary file is removed then.
void write_file(const std::filesystem::path& path, std::string_view bytes);

/// A fresh path next to `target` (same folder, so that a rename is atomic) for a temporary
/// file: ".<name>.tmp.<pid>.<counter>".
std::filesystem::path temp_path_for(const std::filesystem::path& target);

/// Atomically replaces `target` by `temp` (rename(2) within one file system). Throws
/// std::runtime_error naming both paths, after removing `temp`, when the rename fails.
void commit_file(const std::filesystem::path& temp, const std::filesystem::path& target);

}  // namespace dtwin
