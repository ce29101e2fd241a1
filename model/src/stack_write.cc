// Writing a software stack as a stack file (stack.h), the schema stack.cc reads: every constant
// with the source it came from, a field left at its default saying so.
#include <nlohmann/json.hpp>

#include "dagsgd/model/stack.h"
#include "file_schema.h"

namespace dagsgd::model {
namespace {

using OJson = nlohmann::ordered_json;

// The source a written field without one gets: the field was left at its default.
constexpr const char* kDefaultSource = "dagsgd's default (model/include/dagsgd/model/stack.h)";

OJson constant(OJson value, const StackSpec& s, const std::string& field) {
  OJson c = OJson::object();
  c["value"] = std::move(value);
  const std::string src = s.source_of(field);
  c["source"] = src.empty() ? kDefaultSource : src;
  return c;
}

OJson rules_json(const std::vector<AlgorithmRule>& rules, const StackSpec& s,
                 const std::string& field) {
  OJson list = OJson::array();
  std::size_t i = 0;
  while (i < rules.size()) {
    const int ranks = rules[i].ranks_below;
    OJson sizes = OJson::array();
    for (; i < rules.size() && rules[i].ranks_below == ranks; ++i) {
      OJson pair = OJson::array();
      pair.push_back(rules[i].bytes_below > 0 ? OJson(rules[i].bytes_below) : OJson(nullptr));
      pair.push_back(rules[i].algorithm);
      sizes.push_back(std::move(pair));
    }
    OJson row = OJson::object();
    if (ranks > 0) row["ranks_below"] = ranks;
    row["sizes"] = std::move(sizes);
    list.push_back(std::move(row));
  }
  OJson t = OJson::object();
  t["rules"] = std::move(list);
  const std::string src = s.source_of(field);
  t["source"] = src.empty() ? kDefaultSource : src;
  return t;
}

}  // namespace

std::string stack_to_json(const StackSpec& s) {
  OJson j = OJson::object();
  j["schema"] = kStackSchema;
  j["name"] = s.name;
  j["description"] = s.description;
  const LibrarySpec& l = s.library;
  OJson lib = OJson::object();
  lib["kind"] = l.kind;
  lib["name"] = l.name;
  lib["per_message_us"] =
      constant(human_number(l.per_message_ns / 1e3), s, "library.per_message_us");
  if (l.per_collective_ns > 0 || !s.source_of("library.per_collective_us").empty()) {
    lib["per_collective_us"] =
        constant(human_number(l.per_collective_ns / 1e3), s, "library.per_collective_us");
  }
  lib["efficiency"] = constant(human_number(l.efficiency), s, "library.efficiency");
  lib["connection_gbps"] = constant(human_number(l.connection_bandwidth / kBytesPerSecPerGbps), s,
                                    "library.connection_gbps");
  lib["connections"] = constant(l.connections, s, "library.connections");
  lib["bandwidth_limit"] = constant(l.bandwidth_limit, s, "library.bandwidth_limit");
  if (l.peer_transfers != "parallel" || !s.source_of("library.peer_transfers").empty()) {
    lib["peer_transfers"] = constant(l.peer_transfers, s, "library.peer_transfers");
  }
  if (l.eager_limit >= 0) {
    lib["eager_limit_bytes"] = constant(l.eager_limit, s, "library.eager_limit_bytes");
    lib["rendezvous_us"] =
        constant(human_number(l.rendezvous_ns / 1e3), s, "library.rendezvous_us");
  }
  if (!l.blocking.empty()) lib["blocking"] = rules_json(l.blocking, s, "library.blocking");
  if (!l.nonblocking.empty()) {
    lib["nonblocking"] = rules_json(l.nonblocking, s, "library.nonblocking");
  }
  if (!l.nonblocking_in_place.empty()) {
    lib["nonblocking_in_place"] =
        rules_json(l.nonblocking_in_place, s, "library.nonblocking_in_place");
  }
  if (!l.algorithms.empty()) lib["algorithms"] = constant(l.algorithms, s, "library.algorithms");
  if (!l.one_node_algorithms.empty()) {
    lib["one_node_algorithms"] = constant(l.one_node_algorithms, s, "library.one_node_algorithms");
  }
  if (!l.protocols.empty()) {
    OJson list = OJson::array();
    for (const auto& p : l.protocols) {
      OJson pj = OJson::object();
      pj["name"] = p.name;
      OJson pm = OJson::object();
      pm["intra"] = human_number(p.per_message_intra_ns / 1e3);
      pm["inter"] = human_number(p.per_message_inter_ns / 1e3);
      pj["per_message_us"] = std::move(pm);
      OJson pc = OJson::object();
      for (const auto& [a, v] : p.per_collective_ns) pc[a] = human_number(v / 1e3);
      pj["per_collective_us"] = std::move(pc);
      OJson eff = OJson::object();
      for (const auto& [a, v] : p.efficiency) eff[a] = human_number(v);
      pj["efficiency"] = std::move(eff);
      if (!p.tree_correction.empty()) pj["tree_correction"] = p.tree_correction;
      list.push_back(std::move(pj));
    }
    OJson t = OJson::object();
    t["list"] = std::move(list);
    const std::string src = s.source_of("library.protocols");
    t["source"] = src.empty() ? kDefaultSource : src;
    lib["protocols"] = std::move(t);
  }
  j["library"] = std::move(lib);
  if (s.framework) {
    const FrameworkSpec& f = *s.framework;
    OJson fw = OJson::object();
    fw["name"] = f.name;
    fw["call"] = constant(f.call, s, "framework.call");
    if (!f.grouping.empty()) fw["grouping"] = constant(f.grouping, s, "framework.grouping");
    fw["per_collective_us"] =
        constant(human_number(f.per_collective_ns / 1e3), s, "framework.per_collective_us");
    fw["cycle_ms"] = constant(human_number(f.cycle_ns / 1e6), s, "framework.cycle_ms");
    fw["negotiation"] = constant(f.negotiation, s, "framework.negotiation");
    fw["host_copy_gbps"] = constant(human_number(f.host_copy_bandwidth / kBytesPerSecPerGbps), s,
                                    "framework.host_copy_gbps");
    fw["mixed_precision_gradient_bytes"] =
        constant(f.mixed_precision_gradient_bytes, s, "framework.mixed_precision_gradient_bytes");
    // Only where the framework copies: files written before the field existed stay the same.
    if (f.copy_in_bytes > 0 || f.copy_back_bytes > 0) {
      fw["copy_in_bytes"] = constant(human_number(f.copy_in_bytes), s, "framework.copy_in_bytes");
      fw["copy_back_bytes"] =
          constant(human_number(f.copy_back_bytes), s, "framework.copy_back_bytes");
    }
    j["framework"] = std::move(fw);
  }
  return j.dump(2);
}

}  // namespace dagsgd::model
