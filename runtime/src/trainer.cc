// The data-parallel training loop: per-layer forward/backward on the host or the device, the
// gradient exchange as configured, momentum SGD or EASGD, every step timed as a span.
#include "dagsgd/runtime/trainer.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include "dagsgd/runtime/model_builder.h"
#include "mpi_world.h"
#include "trainer_impl.h"

namespace dagsgd::runtime {

using trace::Phase;

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0) {
    MPI_Init(argc, argv);
    owns_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  if (owns_) MPI_Finalize();
}

Trainer::Impl::Impl(const TrainConfig& config, std::vector<std::unique_ptr<Layer>> layers,
                    Dataset train_set, bool tracing)
    : cfg(config),
      rank(world_rank()),
      size(world_size()),
      model(std::move(layers), config.batch, kEvalBatch, config.seed),
      exchange(model, config),
      batches(std::move(train_set), config.batch, config.seed),
      spans(tracing) {
  if (cfg.sync == SyncKind::kEasgd) easgd.emplace(cfg, model.params());
}

double Trainer::Impl::current_lr() const {
  if (planned <= 0) return cfg.lr;
  double frac = std::min(1.0, static_cast<double>(iteration) / static_cast<double>(planned));
  return cfg.lr * 0.5 * (1.0 + std::cos(3.14159265358979323846 * frac));
}

std::int64_t Trainer::Impl::step() { return dev ? step_device() : step_host(); }

model::Expected<void> Trainer::Impl::open_trace(const RankTraceConfig& config) {
  const Precision precision = cfg.precision;
  const ExchangeDriver* ex = &exchange;
  return spans.open(config, [ex, precision](trace::Event& e, int g, bool comm) {
    ex->describe(e, g, comm, precision);
  });
}

void Trainer::Impl::issue_host(int g) {
  // The collective's span starts with its issue span on the main thread.
  exchange.issue(g, model.grads().data(), spans.cursor());
  spans.mark("comm_issue", Phase::kComm, -1, g);
}

void Trainer::Impl::record_comm() {
  if (!spans.enabled()) return;
  const char* collective = exchange.exchange().collective();
  for (const auto& c : exchange.comm_spans(cfg.sync == SyncKind::kEasgd)) {
    spans.comm(collective, c.layer, c.group, c.start, c.end);
  }
}

std::int64_t Trainer::Impl::finish_iteration() {
  std::int64_t duration = spans.end_iteration();
  ++iteration;
  return duration;
}

void Trainer::Impl::backward_host(bool overlap) {
  const int b = cfg.batch;
  for (int l = model.layer_count() - 1; l >= 0; --l) {
    model.backward(l, b, overlap ? exchange.progress_fn() : ProgressFn());
    spans.mark(model.layer(l).name().c_str(), Phase::kBackward, l);
    if (overlap && exchange.closed_by(l) >= 0) issue_host(exchange.closed_by(l));
    if (overlap) exchange.exchange().progress();
  }
}

std::int64_t Trainer::Impl::step_host() {
  spans.begin_iteration(iteration);
  const int b = cfg.batch;
  batches.next();
  spans.mark("io", Phase::kIo);
  model.set_input(batches.x());
  spans.mark("h2d", Phase::kH2D);
  const int n_layers = model.layer_count();
  for (int l = 0; l < n_layers; ++l) {
    model.forward(l, b);
    spans.mark(model.layer(l).name().c_str(), Phase::kForward, l);
  }
  loss_sum += model.loss(batches.y().data(), b);
  ++loss_count;
  spans.mark("loss", Phase::kForward, n_layers);

  const bool bsp = cfg.sync == SyncKind::kBsp;
  backward_host(bsp && cfg.overlap != OverlapKind::kNone);
  if (bsp) {
    if (cfg.overlap == OverlapKind::kNone) issue_host(0);
    exchange.wait_all();
    spans.mark("comm_wait", Phase::kComm);
    record_comm();
  }
  model.sgd_update(static_cast<float>(current_lr()), static_cast<float>(cfg.momentum));
  spans.mark("update", Phase::kUpdate);

  if (easgd && easgd->due(iteration)) {
    easgd->average(exchange, model.params(), spans.cursor());
    spans.mark("comm_wait", Phase::kComm, -1, 0);
    record_comm();
  }
  std::int64_t duration = finish_iteration();
  spans.commit();
  return duration;
}

void Trainer::Impl::dev_check(const model::Expected<void>& r) {
  if (!r.ok() && dev_status.ok()) dev_status = r.error();
}

void Trainer::Impl::issue_device(int g) {
  // The exchange reads host memory: the group's slice comes down first (this waits for the
  // kernels that produce it), inside the issue span.
  const std::int64_t at = spans.cursor();
  if (dev_status.ok()) {
    const GradientGroup& grp = exchange.groups()[static_cast<std::size_t>(g)];
    dev_check(dev->download_grads(grp.range.offset, grp.range.count, model.grads().data(),
                                  exchange.label(g, model)));
  }
  exchange.issue(g, model.grads().data(), at);
  spans.mark("comm_issue", Phase::kComm, -1, g);
}

// One BSP iteration on the device. After a device error the MPI part still runs (on stale
// gradients) so no rank hangs; train() reports the error at the end of the epoch.
std::int64_t Trainer::Impl::step_device() {
  spans.begin_iteration(iteration);
  const int b = cfg.batch;
  dev->set_iteration(iteration);
  batches.next();
  spans.mark("io", Phase::kIo);
  if (dev_status.ok()) dev_check(dev->upload_batch(batches.x().data(), batches.y().data(), b));
  spans.mark("h2d", Phase::kH2D);
  const int n_layers = model.layer_count();
  for (int l = 0; l < n_layers; ++l) {
    if (dev_status.ok()) dev_check(dev->forward(l, b));
    spans.mark(model.layer(l).name().c_str(), Phase::kForward, l);
  }
  if (dev_status.ok()) dev_check(dev->loss(b));
  spans.mark("loss", Phase::kForward, n_layers);

  const bool overlap = cfg.overlap != OverlapKind::kNone;
  exchange.begin_backward();
  int next_layer = n_layers - 1;
  auto on_layer = [&](int l) {
    next_layer = l - 1;
    spans.mark(model.layer(l).name().c_str(), Phase::kBackward, l);
    if (overlap && exchange.closed_by(l) >= 0) issue_device(exchange.closed_by(l));
    if (overlap) exchange.exchange().progress();
  };
  if (dev_status.ok()) dev_check(dev->backward(b, on_layer));
  for (int l = next_layer; l >= 0; --l) on_layer(l);  // only after a device error
  for (int g = 0; g < exchange.group_count(); ++g) {
    if (!exchange.issued(g)) issue_device(g);
  }
  exchange.wait_all();
  spans.mark("comm_wait", Phase::kComm);
  record_comm();

  if (dev_status.ok()) {
    dev_check(dev->update(model.grads().data(), static_cast<float>(current_lr()),
                          static_cast<float>(cfg.momentum)));
  }
  // The loss of this iteration's forward; reading it waits for the update kernels, so the
  // iteration ends when the device is done.
  if (dev_status.ok()) {
    auto l = dev->read_loss(b);
    if (l) {
      loss_sum += *l;
      ++loss_count;
    } else {
      dev_check(l.error());
    }
  }
  spans.mark("update", Phase::kUpdate);
  std::int64_t duration = finish_iteration();
  // Outside the timed iteration: hand CUPTI's buffers over so they are reused.
  if (spans.enabled() && dev_status.ok()) {
    auto ev = dev->take_events();
    if (ev) {
      spans.add_device_events(std::move(*ev));
    } else {
      dev_check(ev.error());
    }
  }
  spans.commit();
  return duration;
}

std::pair<double, double> Trainer::Impl::evaluate(const Dataset& test) {
  double loss = 0;
  std::int64_t correct = 0;
  if (dev) {
    dev->set_iteration(-1);
    if (dev_status.ok()) {
      auto r = dev->evaluate(test.images.data(), test.labels.data(), test.count);
      if (r) {
        std::tie(loss, correct) = *r;
      } else {
        dev_check(r.error());
      }
    }
  } else {
    std::tie(loss, correct) = model.evaluate(test, easgd ? easgd->center() : model.params().data());
  }
  double sums[3] = {loss, static_cast<double>(correct), static_cast<double>(test.count)};
  MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return {sums[0] / sums[2], sums[1] / sums[2]};
}

namespace {

model::Expected<std::unique_ptr<DeviceBackend>> make_device(const TrainConfig& cfg,
                                                            const HostModel& model, int rank,
                                                            bool tracing) {
  DeviceSetup ds;
  for (const auto& l : model.layers()) {
    ds.layers.push_back(DeviceLayer{l->name(), l->in_size(), l->out_size()});
  }
  ds.max_batch = std::max(cfg.batch, kEvalBatch);
  ds.seed = cfg.seed;
  ds.rank = rank;
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &ds.local_rank);
  MPI_Comm_free(&node);
  ds.tracing = tracing;
  ds.host_clock_ns = &now_ns;
  return make_cuda_backend(ds);
}

}  // namespace

Trainer::Trainer() = default;
Trainer::~Trainer() = default;

model::Expected<std::unique_ptr<Trainer>> Trainer::create(const TrainConfig& cfg, Dataset train_set,
                                                          bool tracing) {
  auto layers = build_model(cfg);
  if (!layers) return layers.error();
  if (cfg.device == DeviceKind::kCuda) {
    layers = fc_layers_for_device(std::move(*layers), cfg.model);
    if (!layers) return layers.error();
  }
  std::unique_ptr<Trainer> t(new Trainer());
  t->impl_ = std::make_unique<Impl>(cfg, std::move(*layers), std::move(train_set), tracing);
  Impl& im = *t->impl_;
  if (cfg.device == DeviceKind::kCuda) {
    auto dev = make_device(cfg, im.model, im.rank, tracing);
    if (!dev) return dev.error();
    im.dev = std::move(*dev);
  }
  if (im.batches.batches_per_epoch() < 1) {
    return model::Error{"--batch " + std::to_string(cfg.batch) + " is larger than this rank's " +
                        std::to_string(im.batches.data().count) + " training samples"};
  }
  return t;
}

model::Expected<void> Trainer::stream_trace(const std::string& path) {
  if (!impl_->spans.enabled()) throw std::logic_error("Trainer::stream_trace without tracing");
  RankTraceConfig rc;
  rc.path = path;
  rc.rank = impl_->rank;
  rc.world_size = impl_->size;
  rc.base_ns = now_ns();
  rc.host = host_name();
  rc.os_pid = getpid();
  return impl_->open_trace(rc);
}

std::int64_t Trainer::step() { return impl_->step(); }
std::int64_t Trainer::events_recorded() const { return impl_->spans.recorded(); }

}  // namespace dagsgd::runtime
