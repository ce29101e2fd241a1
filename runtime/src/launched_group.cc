// A group of launched processes over MPI_COMM_WORLD (launched_group.h).
#include "dagsgd/runtime/launched_group.h"

#include <mpi.h>

#include <vector>

#include "dagsgd/runtime/launcher.h"

namespace dagsgd::runtime {

LaunchedGroup::LaunchedGroup() {
  if (!launcher_env()) return;
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  mpi_ = true;
}

LaunchedGroup::~LaunchedGroup() {
  if (mpi_) MPI_Finalize();
}

int LaunchedGroup::agree(int code) const {
  if (mpi_) MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return code;
}

std::string LaunchedGroup::gather(const std::string& mine) const {
  if (!mpi_) return mine;
  int n = static_cast<int>(mine.size());
  std::vector<int> sizes(static_cast<std::size_t>(size_));
  MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(static_cast<std::size_t>(size_), 0);
  int total = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    offsets[r] = total;
    total += sizes[r];
  }
  std::string all(rank_ == 0 ? static_cast<std::size_t>(total) : 0, '\0');
  MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  return all;
}

}  // namespace dagsgd::runtime
