// Small file helpers shared by every component: whole-file reads with clear errors.
#pragma once

#include <string>

#include "dagsgd/model/expected.h"

namespace dagsgd::model {

// Reads a whole file; a '.gz' file is decompressed. The error names the file.
Expected<std::string> read_file(const std::string& path);

// Writes a whole file. Refuses to replace an existing file unless `force`.
Expected<void> write_file(const std::string& path, const std::string& content, bool force);

bool file_exists(const std::string& path);

}  // namespace dagsgd::model
