// The rank and size an MPI launcher gave this process, read from its environment before (or
// without) MPI_Init. Header-only: the injected CUPTI library uses it and links nothing else.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <optional>

namespace dagsgd::runtime {

struct LauncherEnv {
  int rank = 0;
  int size = 1;
};

namespace launcher_detail {

// One launcher's variables; `size` is null where the launcher exports no world size.
struct Vars {
  const char* rank;
  const char* size;
};

// Open MPI (mpirun/prterun), PMIx (Open MPI 5, Slurm --mpi=pmix), PMI (MPICH Hydra, Intel MPI,
// MVAPICH), Slurm (srun). The first launcher whose rank variable is set decides.
inline constexpr Vars kLaunchers[] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                      {"PMIX_RANK", nullptr},
                                      {"PMI_RANK", "PMI_SIZE"},
                                      {"SLURM_PROCID", "SLURM_NTASKS"}};

// The variable as a non-negative int; nullopt when unset, empty or not a number.
inline std::optional<int> env_int(const char* name) {
  const char* v = name == nullptr ? nullptr : std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || n < 0 || n > 1'000'000'000) return std::nullopt;
  return static_cast<int>(n);
}

}  // namespace launcher_detail

// Where the launcher's own size variable is missing (PMIx exports none), the first size any
// launcher in the list exports is taken; failing that, rank + 1, the least the size can be.
// nullopt when no launcher started this process (a plain run, or an MPI singleton).
inline std::optional<LauncherEnv> launcher_env() {
  using launcher_detail::env_int;
  for (const auto& l : launcher_detail::kLaunchers) {
    std::optional<int> rank = env_int(l.rank);
    if (!rank) continue;
    std::optional<int> size = env_int(l.size);
    for (const auto& other : launcher_detail::kLaunchers) {
      if (!size || *size < 1) size = env_int(other.size);
    }
    LauncherEnv env;
    env.rank = *rank;
    env.size = size && *size > *rank ? *size : *rank + 1;
    return env;
  }
  return std::nullopt;
}

}  // namespace dagsgd::runtime
