// Writing a file whole: through a temporary file next to it, fsync(2) and a rename(2), so that no
// reader, no crash and no power loss ever leaves half a file under the final name. Every file dtwin
// writes in one piece goes through here, and the files it reads back whole (traces, summaries) come
// through read_file.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace dtwin {

/// Writes `bytes` to `path` (replacing it) via a temporary file in the same folder, fsync of the
/// file, an atomic rename and fsync of the folder. Throws std::runtime_error "PATH: cannot write:
/// REASON" when the folder is missing or not writable, or the disk is full; the temporary file
/// is removed then.
void write_file(const std::filesystem::path& path, std::string_view bytes);

/// The bytes of the file at `path`; nullopt when it cannot be opened.
std::optional<std::string> read_file(const std::filesystem::path& path);

}  // namespace dtwin
