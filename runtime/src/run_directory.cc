// Preparing and, after a failure, removing a run directory without touching a user's files.
#include "run_directory.h"

#include <filesystem>

#include "dagsgd/trace/manifest.h"

namespace dagsgd::runtime {

namespace fs = std::filesystem;

model::Expected<RunDirectory> RunDirectory::prepare(const std::string& path, bool force,
                                                    const std::string& flag, bool empty_is_free) {
  RunDirectory d;
  d.path_ = path;
  const std::string where = flag + " '" + path + "'";
  std::error_code ec;
  if (fs::exists(path, ec)) {
    if (!fs::is_directory(path, ec)) return model::Error{where + " exists and is not a directory"};
    bool empty = fs::is_empty(path, ec);
    if (!force && !(empty && empty_is_free)) {
      return model::Error{where + " already exists" + (empty ? "" : " and is not empty") +
                          "; pass --force to replace its run"};
    }
    for (const auto& [rank, file] : d.rank_traces()) fs::remove(file, ec);
    fs::remove(fs::path(path) / trace::kManifestName, ec);
    fs::remove(fs::path(path) / trace::kLegacyManifestName, ec);
    return d;
  }
  fs::path full = fs::absolute(path, ec).lexically_normal();
  if (!full.has_filename()) full = full.parent_path();  // "dir/"
  for (fs::path p = full; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    d.created_.insert(d.created_.begin(), p.string());
    if (p == p.parent_path()) break;
  }
  fs::create_directories(path, ec);
  if (ec) return model::Error{where + ": cannot create: " + ec.message()};
  return d;
}

std::map<int, std::string> RunDirectory::rank_traces() const {
  std::map<int, std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path_, ec)) {
    if (auto rank = trace::parse_rank_trace_name(entry.path().filename().string())) {
      out[*rank] = entry.path().string();
    }
  }
  return out;
}

void RunDirectory::discard_if_empty() const {
  std::error_code ec;
  // fs::remove refuses a directory that is not empty: a file anyone put there keeps it.
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    if (!fs::remove(*it, ec)) break;
  }
}

}  // namespace dagsgd::runtime
