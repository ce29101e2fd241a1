// The trainer's side of the gradient exchange: which layers form each gradient group (a layer
// under wfbp, a bucket, or all of them), when each group's collective is issued during backward
// (the overlap policy), and what the trace says about it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dagsgd/runtime/exchange.h"
#include "dagsgd/runtime/layers.h"
#include "dagsgd/runtime/train_config.h"
#include "dagsgd/trace/event.h"
#include "host_model.h"

namespace dagsgd::runtime {

struct GradientGroup {
  int first_layer = 0;  // lowest layer index (its backward finishes last)
  int last_layer = 0;
  GroupRange range;
  std::string layers;  // layer indices it carries, in backward order, e.g. "4,2"
};

// Groups in backward order, each a contiguous slice of the flat gradient buffer: one per layer
// with parameters under wfbp, buckets of at least cfg.bucket_mib, else (and for EASGD) one.
std::vector<GradientGroup> plan_groups(const HostModel& model, const TrainConfig& cfg);

class ExchangeDriver {
 public:
  // Collective (the exchange duplicates communicators).
  ExchangeDriver(const HostModel& model, const TrainConfig& cfg);

  const std::vector<GradientGroup>& groups() const { return groups_; }
  int group_count() const { return static_cast<int>(groups_.size()); }
  // The group whose last backward layer `layer` is, or -1.
  int closed_by(int layer) const { return closes_[static_cast<std::size_t>(layer)]; }
  // Layer l's name, or "bucket g" for a group of several layers.
  std::string label(int g, const HostModel& model) const;
  GradientExchange& exchange() { return *exchange_; }
  // Keeps in-flight collectives moving from inside long backward computations.
  const ProgressFn& progress_fn() const { return progress_; }

  // Forgets which groups were issued (at the start of an iteration's backward).
  void begin_backward();
  // Starts group g's average over `grads`; its span starts at `issued_at` (local ns).
  void issue(int g, float* grads, std::int64_t issued_at);
  bool issued(int g) const { return issued_[static_cast<std::size_t>(g)]; }
  // For collectives the caller runs itself on exchange() (EASGD): group g's span starts here.
  void note_issue(int g, std::int64_t issued_at) {
    issue_ns_[static_cast<std::size_t>(g)] = issued_at;
  }
  void wait_all();

  // The spans of this iteration's collectives, from issue to observed completion.
  struct CommSpan {
    int group = 0;
    int layer = -1;  // -1 for a bucket of layers
    std::int64_t start = 0;
    std::int64_t end = 0;
  };
  std::vector<CommSpan> comm_spans(bool first_only) const;
  // The trace arguments of a span that belongs to group g (a comm span if `comm`).
  void describe(trace::Event& e, int g, bool comm, Precision precision) const;

 private:
  std::vector<GradientGroup> groups_;
  std::vector<int> closes_;  // layer -> group whose last backward it is, or -1
  std::unique_ptr<GradientExchange> exchange_;
  std::vector<std::int64_t> issue_ns_;
  std::vector<bool> issued_;
  ProgressFn progress_;
};

}  // namespace dagsgd::runtime
