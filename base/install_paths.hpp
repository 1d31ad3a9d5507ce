// Where dtwin's shared files (device descriptions, plot scripts) are: installed beside the
// executable, or in the source tree it was built from.
#pragma once

#include <string>

namespace dtwin {

/// `<prefix>/share/dtwin/<subdir>` when the running executable sits in `<prefix>/bin` of an
/// installation holding that folder (`cmake --install`), else `source_dir`, the folder in the
/// source tree that the build names.
std::string shared_folder(const std::string& subdir, const std::string& source_dir);

}  // namespace dtwin
