// The run directory a traced run writes (run.manifest + rank-<r>.trace.json), made ready before
// the run and taken away again if the run fails before writing anything into it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"

namespace dagsgd::runtime {

class RunDirectory {
 public:
  // Makes `path` ready for a run. An existing directory needs `force` (or, if `empty_is_free`,
  // to be empty); force removes only a previous run's manifest and rank traces, never a user's
  // other files. `flag` names the option in errors, e.g. "--trace".
  static model::Expected<RunDirectory> prepare(const std::string& path, bool force,
                                               const std::string& flag, bool empty_is_free);

  const std::string& path() const { return path_; }
  // The rank traces now in the directory, by rank.
  std::map<int, std::string> rank_traces() const;
  // After a failed run: removes the directories prepare() created, if they are still empty.
  // Whatever a rank wrote (a partial run) and whatever was there before stays.
  void discard_if_empty() const;

 private:
  std::string path_;
  std::vector<std::string> created_;  // outermost first
};

}  // namespace dagsgd::runtime
