// dagsgd topology: the bundled node types (servers as vendors describe them) and what a cluster of
// them looks like: devices, links, routes, ring order, network.
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/sim/cluster_request.h"

namespace dagsgd::tools {

namespace {

struct ShowOptions {
  sim::ClusterRequest cluster;
  bool dot = false;
  bool json = false;
};

struct ListOptions {};

constexpr const char* kTopologyHelp =
    "Node types (one server: GPUs, PCIe switches, CPU sockets, NICs, NVLink/NVSwitch) and the\n"
    "clusters they form. Run 'dagsgd topology show dgx1-v100' or 'dagsgd topology list'.";

constexpr const char* kShowHelp =
    "Print a node type: devices, links (bandwidth per direction, latency), the NIC each GPU\n"
    "uses, the intra-node ring order and the route and bottleneck of every GPU pair; with\n"
    "--nodes N, the cluster network too. --dot prints Graphviz, --json one JSON object.\n"
    "Example: dagsgd topology show dgx1-v100 --nodes 16 --network fat-tree:2:4";

constexpr const char* kListHelp = "List the bundled node types, one line each.";

int run_show(const ShowOptions& o) {
  auto cluster = sim::build_cluster(o.cluster);
  if (!cluster) return report_error(cluster.error().message);
  print(o.dot ? cluster->to_dot() : o.json ? cluster->to_json() : cluster->describe());
  return kExitOk;
}

int run_list(const ListOptions&) {
  auto list = sim::list_node_types();
  if (!list) return report_error(list.error().message, kExitFailure);
  print(*list);
  return kExitOk;
}

}  // namespace

void add_topology(CLI::App& root, Action& action) {
  CLI::App* topology = root.add_subcommand("topology", kTopologyHelp);
  topology->require_subcommand(1);
  auto [show, o] = add_command<ShowOptions>(*topology, action, "show", kShowHelp, run_show);
  show->add_option("NODE_TYPE", o->cluster.node_type,
                   "A bundled node type (dagsgd topology list) or a node type file (.json, "
                   "docs/topology.md)")
      ->required();
  show->add_option("--nodes", o->cluster.nodes, "Nodes in the cluster")
      ->check(worker_count())
      ->capture_default_str();
  show->add_option("--cluster-network", o->cluster.network,
                   "How nodes are joined: single-switch, fat-tree:OVERSUB[:NODES_PER_LEAF] or "
                   "rail[:OVERSUB]")
      ->capture_default_str();
  show->add_option("--inter", o->cluster.inter,
                   "Fabric of the NIC ports (datasets/hardware/fabrics.json); default: the node "
                   "type's nic_fabric");
  show->add_option("--fabric-file", o->cluster.fabric_files,
                   "Extra fabrics, e.g. from calibrate --out");
  auto* dot = show->add_flag("--dot", o->dot, "Print Graphviz (dot) instead of text");
  show->add_flag("--json", o->json, "Print one JSON object instead of text")->excludes(dot);
  add_command<ListOptions>(*topology, action, "list", kListHelp, run_list);
}

}  // namespace dagsgd::tools
