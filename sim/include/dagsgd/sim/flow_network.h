// The flow-level network tier: every running collective's transfers (model::FlowPlan) on the
// cluster's links, sharing them max-min fairly (progressive filling); rates are recomputed only
// when a phase starts or ends. Several collectives in flight, the GPUs of a node on one NIC and
// parameter-server incast are all the same mechanism: transfers that cross one link.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dagsgd/model/collective_flows.h"
#include "dagsgd/sim/cluster_topology.h"
#include "dagsgd/sim/engine.h"

namespace dagsgd::sim {

// How many transfers of one phase cross each link (link index, count), by link index.
using LinkUsage = std::vector<std::pair<int, int>>;

// Weighted max-min fair rates: group g's transfers each move at rate[g] (bytes/ns) and take
// usage[g] counts times that on each link they cross; capacity in bytes/ns; `cap[g]` > 0 bounds
// a group's rate too (e.g. a per-connection limit), 0 = none. Progressive filling: the link (or
// cap) that leaves the least per transfer fixes its groups' rate, which is then taken from every
// link they cross, until every group has one. Groups crossing no link get their cap, or +inf.
std::vector<double> max_min_rates(const std::vector<const LinkUsage*>& usage,
                                  const std::vector<double>& cap,
                                  const std::vector<double>& capacity);

// Per link, what it carried in a window of time: bytes and the time it was busy (any transfer
// on it).
struct LinkLoad {
  double bytes = 0;
  double busy_ns = 0;
};

// The time of `plan` alone on `cluster` (no other traffic): its phases' fixed parts plus each
// phase's bytes at the rate its transfers get when only they share the links.
double isolated_time_ns(const ClusterTopology& cluster, const model::FlowPlan& plan,
                        double bandwidth_scale = 1);

// Fits `plan` so that alone on `cluster` it takes `target` ns (a measured curve's time). Slower
// than the links allow: the difference is the library's own time (progress, reduction, the
// ranks' scheduling), added to the phases' fixed parts in proportion to their bytes, and the
// transfers keep the links' rate, so another collective's transfers may use a connection while
// this one is not moving data on it (docs/communication.md, "Collectives in flight together").
// Faster: the fixed parts shrink; faster than the transfers alone, they carry proportionally
// fewer bytes (the plan of one call overstates a stream's wire time per call).
void fit_plan_to(model::FlowPlan& plan, const ClusterTopology& cluster, double target);

// One link's load over a window of time, for reports.
struct LinkUse {
  std::string link;        // "n0.gpu3 -> n0.plx1"
  std::string kind;        // "pcie", "nvlink", "ethernet", ...
  double busy = 0;         // fraction of the iteration with a transfer on it
  double utilization = 0;  // bytes carried / (bandwidth x iteration)
  double gigabytes = 0;    // carried in the iteration
};

class FlowNetwork;
// The links that carried most for their bandwidth in [from, to) ns, at most `shown`.
std::vector<LinkUse> busiest_links(const FlowNetwork& net, double from, double to,
                                   std::size_t shown = 8);

// A shaped link (a token-bucket shaper's burst, TopoLink::burst_bytes): a transfer that
// starts when every shaped link it crosses has allowance left moves that much at once (the
// links inside a node, far faster than a shaped port, do not hold it); the allowance comes back
// at the link's rate less what crosses it, up to the bucket.
class FlowNetwork final : public TaskTimer {
 public:
  // `bandwidth_scale` multiplies every link's bandwidth (2: the "twice the bandwidth" what-if).
  explicit FlowNetwork(std::shared_ptr<const ClusterTopology> cluster, double bandwidth_scale = 1);

  // Task `t` runs `plan` when it starts (its DAG duration is not used); a phase's `rate_cap`
  // limits each of its transfers.
  void assign(model::TaskId t, model::FlowPlan plan);
  // One transfer at a time between two ranks, whatever its direction (model::LibrarySpec::
  // peer_transfers "serial"): a phase whose fixed part is over waits while another collective's
  // phase moves data between any pair of ranks it moves data between; waiting phases start in
  // the order they became ready.
  void set_serial_peers(bool serial) { serial_peers_ = serial; }

  bool handles(model::TaskId t) const override;
  void start(model::TaskId t, model::Nanos now) override;
  model::Nanos next_event() const override;
  void advance(model::Nanos now, std::vector<model::TaskId>& finished) override;

  const ClusterTopology& cluster() const { return *cluster_; }
  // What each link carried in [from, to) ns (indexed like cluster().links()).
  std::vector<LinkLoad> loads(double from, double to) const;
  double capacity(int link) const { return capacity_[static_cast<std::size_t>(link)]; }

 private:
  struct Assigned {
    model::FlowPlan plan;
  };
  struct Running {
    model::TaskId task = model::kNoTask;
    const Assigned* what = nullptr;
    std::size_t phase = 0;
    bool transferring = false;
    bool waiting = false;    // fixed part over, waiting for its rank pairs (serial peers)
    double fixed_until = 0;  // ns, while !transferring
    double remaining = 0;    // bytes per transfer, while transferring
    double rate = 0;         // bytes/ns per transfer
    const LinkUsage* usage = nullptr;
  };

  const LinkUsage& usage_of(const model::FlowPattern& pattern, std::size_t phase);
  void enter_phase(Running& r, double now);
  // Whether another running collective's transfer holds one of `r`'s current rank pairs.
  bool pair_taken(const Running& r) const;
  void progress_to(double now);
  // A phase starting to move data: the bytes its shaped links' bursts let through at once.
  void take_burst(Running& r);
  void recompute_rates();
  double next_exact() const;

  std::shared_ptr<const ClusterTopology> cluster_;
  double bandwidth_scale_ = 1;  // also scales the phases' per-transfer caps
  bool serial_peers_ = false;
  std::vector<double> capacity_;  // bytes/ns per link
  // Shaped links (TopoLink::burst_bytes): each link's bucket and what it holds now; it
  // fills at the link's rate less what crosses it, up to the bucket.
  std::vector<double> burst_;
  std::vector<double> credit_;
  bool shaped_ = false;
  std::unordered_map<model::TaskId, Assigned> assigned_;
  // Usage per (pattern, phase), made once.
  std::unordered_map<const model::FlowPattern*, std::vector<LinkUsage>> usage_;
  // Per usage, the rate its transfers get with nothing else on the links (no cap), made once:
  // a phase alone needs no max-min filling.
  std::unordered_map<const LinkUsage*, double> alone_rate_;
  std::vector<Running> running_;  // in start order (deterministic)
  double clock_ = 0;              // ns: where transfers' progress was last brought
  // What ran between rate changes: [from, to) with each transferring phase's usage and rate.
  struct Segment {
    double from = 0;
    double to = 0;
    std::vector<std::pair<const LinkUsage*, double>> flows;
  };
  std::vector<Segment> segments_;
};

}  // namespace dagsgd::sim
