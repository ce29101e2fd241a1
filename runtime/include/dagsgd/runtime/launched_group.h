// The processes an MPI launcher started together, for commands that split their work across
// them (whatif's sweep). MPI is initialised only when a launcher started this process, so a
// plain run stays one process without an MPI singleton.
#pragma once

#include <string>

namespace dagsgd::runtime {

class LaunchedGroup {
 public:
  LaunchedGroup();
  ~LaunchedGroup();
  LaunchedGroup(const LaunchedGroup&) = delete;
  LaunchedGroup& operator=(const LaunchedGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank 0's `code` on every rank (collective).
  int agree(int code) const;
  // Every rank's bytes concatenated at rank 0, in rank order (collective; "" elsewhere).
  std::string gather(const std::string& mine) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  bool mpi_ = false;
};

}  // namespace dagsgd::runtime
