// A command's output files and their folders (output_files.h).
#include "dagsgd/model/output_files.h"

#include <filesystem>

#include "dagsgd/model/io.h"

namespace dagsgd::model {

namespace {

// `dir` and the folders below it that `files` go in.
std::vector<std::filesystem::path> output_folders(const std::string& dir,
                                                  const std::vector<std::string>& files) {
  std::vector<std::filesystem::path> folders = {dir};
  for (const auto& f : files) folders.push_back((std::filesystem::path(dir) / f).parent_path());
  return folders;
}

}  // namespace

Expected<void> check_output_files(const std::string& dir, const std::vector<std::string>& files,
                                  bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& folder : output_folders(dir, files)) {  // a file or a dangling link there
    if (fs::exists(fs::symlink_status(folder, ec)) && !fs::is_directory(folder, ec)) {
      return Error{"'" + folder.string() + "' is not a directory"};
    }
  }
  for (const auto& f : files) {
    const fs::path path = fs::path(dir) / f;
    if (auto inside = check_output_path(dir, f); !inside) return inside.error();
    if (!force && file_exists(path.string())) {
      return Error{"'" + path.string() + "' exists; use --force to overwrite"};
    }
  }
  return ok();
}

Expected<std::vector<std::string>> make_output_folders(const std::string& dir,
                                                       const std::vector<std::string>& files) {
  namespace fs = std::filesystem;
  std::vector<std::string> created;
  std::error_code ec;
  for (const auto& folder : output_folders(dir, files)) {
    std::vector<std::string> made;  // this folder's missing ones, innermost first
    for (fs::path p = folder; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
      made.push_back(p.string());
    }
    fs::create_directories(folder, ec);
    if (ec) return Error{"cannot create '" + folder.string() + "': " + ec.message()};
    created.insert(created.begin(), made.begin(), made.end());
  }
  return created;
}

}  // namespace dagsgd::model
