// Small collectives over MPI_COMM_WORLD that the trainer's setup and teardown share: one error
// for all ranks, strings gathered on or broadcast from rank 0, where each rank runs.
#pragma once

#include <string>
#include <vector>

#include "dagsgd/model/expected.h"

namespace dagsgd::runtime {

int world_rank();
int world_size();

// Collective: every rank gets the error of the lowest failing rank ("rank r: ..." unless r is
// 0), or ok when no rank failed, so all ranks leave together and none waits forever.
model::Expected<void> agree(const model::Expected<void>& mine);

// Rank 0's `value` on every rank.
std::string broadcast_string(const std::string& value);

// One string per rank (at most 255 bytes each), on rank 0 (empty elsewhere).
std::vector<std::string> gather_strings(const std::string& mine);

// Where each rank ran (the manifest's hosts, machines and cpus), gathered on rank 0.
struct Placement {
  std::vector<std::string> hosts;
  std::vector<std::string> machines;
  std::vector<int> cpus;  // per rank: the CPUs its machine's ranks may use, together
};
Placement gather_placement();

}  // namespace dagsgd::runtime
