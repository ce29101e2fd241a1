// Gradient groups and their collectives as the training loop issues and traces them.
#include "exchange_driver.h"

namespace dagsgd::runtime {

std::vector<GradientGroup> plan_groups(const HostModel& model, const TrainConfig& cfg) {
  std::vector<int> with_params;
  for (int l = model.layer_count() - 1; l >= 0; --l) {
    if (model.layer(l).param_count() > 0) with_params.push_back(l);
  }
  std::vector<std::vector<int>> members;
  double limit = cfg.bucket_mib * 1024.0 * 1024.0;
  double acc = 0;
  for (int l : with_params) {
    bool fresh = members.empty();
    if (!fresh && cfg.overlap == OverlapKind::kWfbp) fresh = true;
    if (!fresh && cfg.overlap == OverlapKind::kBucket && acc >= limit) fresh = true;
    if (fresh) {
      members.emplace_back();
      acc = 0;
    }
    members.back().push_back(l);
    acc += 4.0 * static_cast<double>(model.layer(l).param_count());
  }
  if (cfg.sync == SyncKind::kEasgd) members.assign(1, with_params);
  std::vector<GradientGroup> groups;
  for (const auto& m : members) {
    GradientGroup g;
    g.last_layer = m.front();
    g.first_layer = m.back();
    g.range.offset = model.offset(g.first_layer);
    g.range.count =
        model.offset(g.last_layer) + model.layer(g.last_layer).param_count() - g.range.offset;
    for (int l : m) g.layers += (g.layers.empty() ? "" : ",") + std::to_string(l);
    groups.push_back(std::move(g));
  }
  return groups;
}

ExchangeDriver::ExchangeDriver(const HostModel& model, const TrainConfig& cfg)
    : groups_(plan_groups(model, cfg)) {
  closes_.assign(static_cast<std::size_t>(model.layer_count()), -1);
  std::vector<GroupRange> ranges;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    closes_[static_cast<std::size_t>(groups_[g].first_layer)] = static_cast<int>(g);
    ranges.push_back(groups_[g].range);
  }
  exchange_ = std::make_unique<GradientExchange>(
      ExchangeConfig{cfg.exchange, cfg.precision, cfg.topk}, std::move(ranges));
  issue_ns_.assign(groups_.size(), 0);
  issued_.assign(groups_.size(), false);
  progress_ = [this] { exchange_->progress(); };
}

std::string ExchangeDriver::label(int g, const HostModel& model) const {
  const GradientGroup& grp = groups_[static_cast<std::size_t>(g)];
  return grp.first_layer == grp.last_layer ? model.layer(grp.first_layer).name()
                                           : "bucket " + std::to_string(g);
}

void ExchangeDriver::begin_backward() { issued_.assign(groups_.size(), false); }

void ExchangeDriver::issue(int g, float* grads, std::int64_t issued_at) {
  issue_ns_[static_cast<std::size_t>(g)] = issued_at;
  exchange_->start(g, grads);
  issued_[static_cast<std::size_t>(g)] = true;
}

void ExchangeDriver::wait_all() {
  for (int g = 0; g < group_count(); ++g) exchange_->wait(g);
}

std::vector<ExchangeDriver::CommSpan> ExchangeDriver::comm_spans(bool first_only) const {
  std::vector<CommSpan> out;
  for (int g = 0; g < group_count(); ++g) {
    const GradientGroup& grp = groups_[static_cast<std::size_t>(g)];
    out.push_back(CommSpan{g, grp.first_layer == grp.last_layer ? grp.first_layer : -1,
                           issue_ns_[static_cast<std::size_t>(g)], exchange_->completed_ns(g)});
    if (first_only) break;
  }
  return out;
}

void ExchangeDriver::describe(trace::Event& e, int g, bool comm, Precision precision) const {
  e.add("bucket", std::int64_t{g});
  e.add("layers", groups_[static_cast<std::size_t>(g)].layers);
  e.add(trace::arg::kCollective, std::string(exchange_->collective()));
  if (comm) {
    e.add(trace::arg::kBytes, exchange_->wire_bytes(g));
    e.add(trace::arg::kAlgorithm, std::string(exchange_->algorithm()));
    e.add("precision", std::string(precision_name(precision)));
  }
}

}  // namespace dagsgd::runtime
