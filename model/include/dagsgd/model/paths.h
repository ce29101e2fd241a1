// Where dagsgd finds its bundled data (datasets/), and the tool version.
#pragma once

#include <string>

namespace dagsgd::model {

const char* tool_version();

// The bundled data directory: $DAGSGD_DATA_DIR if set, else the source tree's datasets/.
std::string data_dir();

// data_dir() + "/" + relative.
std::string data_path(const std::string& relative);

}  // namespace dagsgd::model
