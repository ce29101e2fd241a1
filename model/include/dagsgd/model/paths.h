// Where dagsgd finds its bundled data (datasets/), and the tool version.
#pragma once

#include <string>
#include <vector>

namespace dagsgd::model {

const char* tool_version();

// The bundled data directory: $DAGSGD_DATA_DIR if set, else an installed copy's (see
// dagsgd_installed_data_dir below), else the source tree's datasets/.
std::string data_dir();

// data_dir() + "/" + relative.
std::string data_path(const std::string& relative);

// The bundled entries of one kind: the names of the .json files in `dir` without the extension,
// sorted (none where the folder cannot be read).
std::vector<std::string> json_file_stems(const std::string& dir);

// For dagsgd_installed_data_dir() below: `relative` (the install's path from the folder of
// `file` to the data) from the folder of `file` (the program or library that asks), where it
// holds the bundled catalogs; "" where not (the build tree).
std::string data_dir_beside(const std::string& file, const std::string& relative);

}  // namespace dagsgd::model

// Where an installed copy keeps its data (<prefix>/share/dagsgd/datasets), defined only by what
// is installed: the dagsgd binary and the Python module (found relative to themselves), and
// programs that link the installed CMake package (cmake/dagsgd_data_dir.cc.in). The libraries
// refer to it weakly: in the build tree nothing defines it, and the source tree's datasets/ is
// used. Returns null when the installed copy has no data directory.
extern "C" const char* dagsgd_installed_data_dir();
