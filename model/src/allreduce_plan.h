// The phases of one allreduce under each algorithm: shared by the cost model (which prices
// them) and the calibration (which fits alpha and beta to them), so both use one formula.
#pragma once

#include <string>
#include <vector>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/expected.h"

namespace dagsgd::model::detail {

enum class LinkClass { kIntra, kInter };

// A run of sequential messages on one link class. Its cost is
//   messages * (alpha + [message_bytes > eager_limit] * rendezvous) + wire_bytes * beta
//   + reduce_bytes * gamma.
struct Phase {
  LinkClass link = LinkClass::kInter;
  double messages = 0;       // startup latencies paid one after another
  double message_bytes = 0;  // size of each message: decides eager or rendezvous
  double wire_bytes = 0;     // bytes through the busiest endpoint's link, one direction
  double reduce_bytes = 0;   // bytes summed on the critical path
};
using Plan = std::vector<Phase>;

struct Shape {
  int nodes = 1;
  int gpus_per_node = 1;
  int ps_servers = 0;
  int workers() const { return nodes * gpus_per_node; }
};

// The plan of a dense allreduce of `bytes` per worker; `algorithm` is a concrete name (not
// "auto"). Unknown names list the valid ones.
Expected<Plan> allreduce_plan(const std::string& algorithm, const Shape& shape, double bytes);

// The plan of a top-k exchange: a ring allgather of `local_bytes` (values and indices) per worker.
Plan sparse_allgather_plan(const Shape& shape, double local_bytes);

// Algorithms whose plan uses one link class only (what calibration from one log can fit).
std::vector<std::string> single_link_algorithms();

double phase_cost(const Phase& phase, const LinkCost& link);

}  // namespace dagsgd::model::detail
