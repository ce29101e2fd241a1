// Locating bundled data: an environment override first, then an installed copy's data, then
// the build's source tree.
#include "dagsgd/model/paths.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

// Weak: an installed program defines it (paths.h); the build tree leaves it null.
extern "C" const char* dagsgd_installed_data_dir() __attribute__((weak));

namespace dagsgd::model {

const char* tool_version() { return DAGSGD_VERSION; }

std::string data_dir() {
  if (const char* env = std::getenv("DAGSGD_DATA_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  if (dagsgd_installed_data_dir != nullptr) {
    if (const char* dir = dagsgd_installed_data_dir(); dir != nullptr && *dir != '\0') return dir;
  }
  return DAGSGD_DATA_DIR;
}

std::string data_path(const std::string& relative) { return data_dir() + "/" + relative; }

std::vector<std::string> json_file_stems(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto& p = it->path();
    if (p.extension() == ".json") names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string data_dir_beside(const std::string& file, const std::string& relative) {
  std::error_code ec;
  const auto data =
      std::filesystem::weakly_canonical(std::filesystem::path(file).parent_path() / relative, ec);
  return !ec && std::filesystem::is_directory(data / "hardware", ec) ? data.string()
                                                                     : std::string();
}

}  // namespace dagsgd::model
