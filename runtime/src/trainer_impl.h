// The training loop's state, one part per concern: the model on the host, the batches, the
// gradient exchange, EASGD, the device backend and the span recorder. Internal to the runtime.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "batch_source.h"
#include "dagsgd/runtime/trainer.h"
#include "device_backend.h"
#include "easgd.h"
#include "exchange_driver.h"
#include "host_model.h"
#include "span_recorder.h"

namespace dagsgd::runtime {

// Test-set evaluation batch: large enough to amortize the layer calls, small enough to fit.
inline constexpr int kEvalBatch = 500;

struct Trainer::Impl {
  // Collective (the exchange duplicates communicators).
  Impl(const TrainConfig& config, std::vector<std::unique_ptr<Layer>> layers, Dataset train_set,
       bool tracing);

  // One iteration; returns its duration (local ns).
  std::int64_t step();
  // Streams the spans into the rank trace `config` names, group spans described by the exchange.
  model::Expected<void> open_trace(const RankTraceConfig& config);
  // Test loss and accuracy of this rank's test shard, summed over ranks.
  std::pair<double, double> evaluate(const Dataset& test);
  // Cosine decay to zero over the planned iterations (when known) settles the final accuracy,
  // so runs that differ only in rounding (P ranks vs 1) end within noise of each other.
  double current_lr() const;

  TrainConfig cfg;
  int rank = 0;
  int size = 1;
  HostModel model;
  ExchangeDriver exchange;
  std::optional<ElasticAveraging> easgd;
  BatchSource batches;
  SpanRecorder spans;

  // --device cuda: the layers run there; model.grads() is the exchange's host staging buffer.
  std::unique_ptr<DeviceBackend> dev;
  model::Expected<void> dev_status = model::ok();  // the first device error; later work skipped

  std::int64_t iteration = 0;
  std::int64_t planned = 0;
  double loss_sum = 0;
  std::int64_t loss_count = 0;

 private:
  std::int64_t step_host();
  std::int64_t step_device();
  void backward_host(bool overlap);
  void issue_host(int g);
  void issue_device(int g);
  void record_comm();
  void dev_check(const model::Expected<void>& r);
  // Ends the iteration and hands its spans to the trace.
  std::int64_t finish_iteration();
};

}  // namespace dagsgd::runtime
