#include "base/install_paths.hpp"

#include <filesystem>

namespace dtwin {

std::string shared_folder(const std::string& subdir, const std::string& source_dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "dtwin" / subdir;
    if (fs::is_directory(installed, error)) return installed.string();
  }
  return source_dir;
}

}  // namespace dtwin
