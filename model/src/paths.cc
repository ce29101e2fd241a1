// Locating bundled data: an environment override first, then the build's source tree.
#include "dagsgd/model/paths.h"

#include <cstdlib>

namespace dagsgd::model {

const char* tool_version() { return DAGSGD_VERSION; }

std::string data_dir() {
  if (const char* env = std::getenv("DAGSGD_DATA_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return DAGSGD_DATA_DIR;
}

std::string data_path(const std::string& relative) { return data_dir() + "/" + relative; }

}  // namespace dagsgd::model
