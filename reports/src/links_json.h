// The busiest links of a flow-level simulation as every JSON report writes them, and the
// network model they came from. Private to reports/.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dagsgd/sim/flow_network.h"
#include "result_json.h"

namespace dagsgd::reports::detail {

// Adds "network_model" and "busiest_links" to `j` when the flow-level tier simulated the result.
inline void add_links_json(nlohmann::ordered_json& j, const std::string& network_model,
                           const std::vector<sim::LinkUse>& links) {
  if (network_model != "flow") return;
  j["network_model"] = network_model;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& l : links) {
    out.push_back({{"link", l.link},
                   {"kind", l.kind},
                   {"busy_fraction", round6(l.busy)},
                   {"utilization", round6(l.utilization)},
                   {"gigabytes", round6(l.gigabytes)}});
  }
  j["busiest_links"] = out;
}

}  // namespace dagsgd::reports::detail
