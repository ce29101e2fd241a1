// A traced run's collectives by type (collective_summary.h).
#include "dagsgd/sim/collective_summary.h"

#include <algorithm>
#include <map>

#include "dagsgd/sim/trace_replay.h"
#include "replay_collectives.h"

namespace dagsgd::sim {

std::vector<CollectiveTypeSummary> summarize_collectives(
    const trace::TraceDag& td, const std::optional<model::Topology>& fabric) {
  // Keyed by (the op's place in CollectiveOp, or past the last one; the name).
  std::map<std::pair<int, std::string>, CollectiveTypeSummary> rows;
  std::map<std::pair<int, std::string>, double> bus_bytes;
  std::map<std::pair<int, std::string>, model::Nanos> sized_time;
  constexpr int kNoOp = 1000;
  for (const auto& c : td.collectives) {
    const auto op = detail::traced_op(c.kind);
    const std::string name = op ? model::collective_op_name(*op) : detail::traced_name(td, c);
    const std::pair<int, std::string> key{op ? static_cast<int>(*op) : kNoOp, name};
    auto& row = rows[key];
    row.type = name;
    ++row.count;
    row.time += c.measured;
    const double size = detail::traced_size(c);
    if (size <= 0) {
      ++row.unsized;
      continue;
    }
    row.bytes += size;
    if (!op) continue;
    bus_bytes[key] += size * model::bus_bandwidth_factor(*op, c.ranks);
    sized_time[key] += c.measured;
    if (fabric && c.ranks > 1) {
      const model::Topology g = detail::group_topology(*fabric, c);
      const model::LinkCost& link = g.nodes > 1 ? g.inter : g.intra;
      if (link.beta_ns_per_byte > 0) {
        const double gbps = 1.0 / link.beta_ns_per_byte;
        row.fabric_gbps = row.fabric_gbps > 0 ? std::min(row.fabric_gbps, gbps) : gbps;
      }
    }
  }
  std::vector<CollectiveTypeSummary> out;
  out.reserve(rows.size());
  for (auto& [key, row] : rows) {
    const model::Nanos t = sized_time[key];
    if (t > 0) row.bus_gbps = bus_bytes[key] / static_cast<double>(t);
    out.push_back(std::move(row));
  }
  return out;
}

model::Expected<model::Topology> traced_fabric(const trace::TraceDag& td, const std::string& intra,
                                               const std::string& inter,
                                               const model::HardwareCatalog& catalog) {
  model::Topology t = run_topology(td);
  auto in = catalog.fabric(intra);
  if (!in) return model::with_context("intra-node fabric", in.error());
  auto out = catalog.fabric(inter);
  if (!out) return model::with_context("inter-node fabric", out.error());
  t.intra = model::LinkCost::from_fabric(*in);
  t.inter = model::LinkCost::from_fabric(*out);
  return t;
}

}  // namespace dagsgd::sim
