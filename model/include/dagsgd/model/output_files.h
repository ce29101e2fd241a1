// The files a command writes into a folder of the user's: refused where they would replace
// something without --force, and the folders they go in made (and remembered, so that a command
// that fails can remove them again).
#pragma once

#include <string>
#include <vector>

#include "dagsgd/model/expected.h"

namespace dagsgd::model {

// Before a command writes `files` (paths below `dir`): refuses a folder that is not one, a path
// that leaves `dir` through a link (check_output_path) and, unless `force`, a file that exists
// (a dangling link too).
Expected<void> check_output_files(const std::string& dir, const std::vector<std::string>& files,
                                  bool force);

// Creates `dir` and the folders `files` go in; returns those it made, innermost first (what a
// failed command removes again).
Expected<std::vector<std::string>> make_output_folders(const std::string& dir,
                                                       const std::vector<std::string>& files);

}  // namespace dagsgd::model
