// The data-parallel training loop: per-layer forward/backward on the CPU, gradient exchange as
// configured, momentum SGD, per-span timing recorded in memory and written as a Kineto trace.
#include "dagsgd/runtime/trainer.h"

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <thread>

#include "dagsgd/model/check.h"
#include "dagsgd/model/network.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/runtime/clock_sync.h"
#include "dagsgd/runtime/dataset.h"
#include "dagsgd/runtime/exchange.h"
#include "dagsgd/trace/event.h"
#include "dagsgd/trace/trace_writer.h"
#include "device_backend.h"

namespace dagsgd::runtime {

namespace fs = std::filesystem;
using trace::Phase;

namespace {

constexpr std::int64_t kImage = 28;
constexpr std::int64_t kInputs = kImage * kImage;
constexpr int kClasses = 10;
constexpr int kEvalBatch = 500;
// --device cuda trace rows (docs/runtime.md): host threads making CUDA API calls, GPU streams.
constexpr std::int64_t kCudaApiTid = 90000;
constexpr std::int64_t kGpuStreamTid = 100000;

// One timed span, kept compact while training and turned into trace events at the end.
struct Rec {
  enum Kind : std::uint8_t { kMain, kComm, kStep };
  const char* name = "";
  Kind kind = kMain;
  Phase phase = Phase::kNone;
  int layer = -1;
  int group = -1;
  std::int64_t iteration = 0;
  std::int64_t start = 0;
  std::int64_t end = 0;
};

struct Group {
  int first_layer = 0;  // lowest layer index (its backward finishes last)
  int last_layer = 0;
  GroupRange range;
  std::string layers;  // layer indices it carries, in backward order, e.g. "4,2"
};

model::Expected<void> agree(const model::Expected<void>& mine) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int bad = mine.ok() ? size : rank;
  int first = size;
  MPI_Allreduce(&bad, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == size) return model::ok();
  std::string msg = first == rank ? mine.error().message : std::string();
  int len = static_cast<int>(msg.size());
  MPI_Bcast(&len, 1, MPI_INT, first, MPI_COMM_WORLD);
  msg.resize(static_cast<std::size_t>(len));
  MPI_Bcast(msg.data(), len, MPI_CHAR, first, MPI_COMM_WORLD);
  if (first != 0) msg = "rank " + std::to_string(first) + ": " + msg;
  return model::Error{msg};
}

model::Expected<std::vector<std::unique_ptr<Layer>>> layers_from_network(const std::string& path) {
  auto net = model::load_network(path);
  if (!net) return net.error();
  std::string where = "network '" + path + "'";
  for (const auto& l : net->layers) {
    if (l.type != "fc" && l.type != "relu") {
      return model::Error{where + ": layer '" + l.name + "' has type '" + l.type +
                          "'; dagsgd train runs networks of fc and relu layers only"};
    }
  }
  std::int64_t in = 1;
  for (auto d : net->input_shape) in *= d;
  if (net->input_shape.empty()) in = kInputs;
  if (in != kInputs) {
    return model::Error{where + ": input has " + std::to_string(in) +
                        " elements; Fashion-MNIST images have 784 (28x28)"};
  }
  std::vector<std::unique_ptr<Layer>> layers;
  std::int64_t cur = in;
  for (const auto& l : net->layers) {
    if (l.type == "fc") {
      const model::ParamTensor* w = nullptr;
      for (const auto& p : l.params) {
        if (p.name == "weight") w = &p;
      }
      if (w == nullptr || w->shape.size() != 2) {
        return model::Error{where + ": layer '" + l.name +
                            "': an fc layer needs a 'weight' of shape [out, in]"};
      }
      if (w->shape[1] != cur) {
        return model::Error{where + ": layer '" + l.name + "' takes " +
                            std::to_string(w->shape[1]) + " inputs but receives " +
                            std::to_string(cur)};
      }
      cur = w->shape[0];
      layers.push_back(make_dense(l.name, w->shape[1], cur));
    } else {
      layers.push_back(make_relu(l.name, cur));
    }
  }
  if (layers.empty() || cur != kClasses) {
    return model::Error{where +
                        ": the last layer must have 10 outputs (Fashion-MNIST classes), has " +
                        std::to_string(cur)};
  }
  return layers;
}

// Keeps the fc layers of an fc/relu stack for the GPU, which fuses the ReLU into the fc before it:
// a ReLU must follow every fc but the last.
model::Expected<std::vector<std::unique_ptr<Layer>>> fc_layers_for_device(
    std::vector<std::unique_ptr<Layer>> all, const std::string& model) {
  std::vector<std::unique_ptr<Layer>> fc;
  std::string where = "--device cuda: model '" + model + "': ";
  for (std::size_t i = 0; i < all.size(); i += 2) {
    if (std::string(all[i]->type()) != "fc") {
      return model::Error{where + "layer '" + all[i]->name() + "' is a " + all[i]->type() +
                          "; the GPU runs fc layers, each but the last followed by a relu"};
    }
    if (i + 1 < all.size() && std::string(all[i + 1]->type()) != "relu") {
      return model::Error{where + "layer '" + all[i + 1]->name() +
                          "' follows an fc but is no relu; the GPU fuses a relu into each fc"};
    }
    if (i + 2 == all.size()) {
      return model::Error{where + "it ends with relu '" + all[i + 1]->name() +
                          "'; the GPU needs an fc layer last"};
    }
    fc.push_back(std::move(all[i]));
  }
  return fc;
}

}  // namespace

#ifndef DAGSGD_HAVE_CUDA
model::Expected<void> probe_cuda_device() {
  return model::Error{"--device cuda: this build has no CUDA support"};
}
model::Expected<std::unique_ptr<DeviceBackend>> make_cuda_backend(const DeviceSetup& /*setup*/) {
  return model::Error{"--device cuda: this build has no CUDA support"};
}
#endif

int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    const char* v = std::getenv(var);
    if (v != nullptr) return std::atoi(v);
  }
  return 0;
}

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

model::Expected<std::vector<std::unique_ptr<Layer>>> build_model(const TrainConfig& cfg) {
  std::vector<std::unique_ptr<Layer>> layers;
  if (cfg.model == "mlp") {
    std::int64_t in = kInputs;
    int i = 1;
    for (auto w : cfg.widths) {
      layers.push_back(make_dense("fc" + std::to_string(i), in, w));
      layers.push_back(make_relu("relu" + std::to_string(i), w));
      in = w;
      ++i;
    }
    layers.push_back(make_dense("fc" + std::to_string(i), in, kClasses));
    return layers;
  }
  if (cfg.model == "cnn") {
    // Small LeNet-like net: 8 and 16 5x5 filters keep an epoch affordable on one core.
    layers.push_back(make_conv("conv1", 1, 28, 28, 8, 5, 2));
    layers.push_back(make_relu("relu1", std::int64_t{8} * 28 * 28));
    layers.push_back(make_maxpool2("pool1", 8, 28, 28));
    layers.push_back(make_conv("conv2", 8, 14, 14, 16, 5, 2));
    layers.push_back(make_relu("relu2", std::int64_t{16} * 14 * 14));
    layers.push_back(make_maxpool2("pool2", 16, 14, 14));
    layers.push_back(make_dense("fc1", std::int64_t{16} * 7 * 7, 128));
    layers.push_back(make_relu("relu3", 128));
    layers.push_back(make_dense("fc2", 128, kClasses));
    return layers;
  }
  return layers_from_network(cfg.model);
}

struct Trainer::Impl {
  TrainConfig cfg;
  int rank = 0;
  int size = 1;
  bool tracing = false;
  std::vector<std::unique_ptr<Layer>> layers;
  std::vector<std::int64_t> offset;  // parameter offset of each layer
  std::vector<float> params, grads, velocity, center, scratch;
  std::vector<std::vector<float>> acts;   // acts[l] is layer l's input; acts[L] the logits
  std::vector<std::vector<float>> dacts;  // gradient w.r.t. acts[l]
  std::vector<float> dlogits;
  std::vector<Group> groups;
  std::vector<int> closes;  // layer -> group whose last backward it is, or -1
  std::unique_ptr<GradientExchange> exchange;
  std::vector<std::int64_t> issue_ns;
  ProgressFn progress;

  // --device cuda: the layers run there; `grads` is the host staging buffer of the exchange.
  std::unique_ptr<DeviceBackend> dev;
  model::Expected<void> dev_status = model::ok();  // the first device error; later work skipped
  std::vector<trace::Event> dev_events;            // this process's clock, trace base 0
  std::vector<bool> issued;

  Dataset data;
  std::int64_t batches_per_epoch = 0;
  std::vector<std::int64_t> order;
  std::int64_t epoch = 0;
  std::int64_t pos = 0;        // batch position within the epoch
  std::vector<float> batch_x;  // the io stage's staging buffer
  std::vector<std::int32_t> batch_y;

  std::int64_t iteration = 0;
  double loss_sum = 0;
  std::int64_t loss_count = 0;
  std::int64_t cursor = 0;
  std::vector<Rec> recs;

  void mark(const char* name, Phase phase, int layer = -1, int group = -1) {
    std::int64_t t = now_ns();
    if (tracing) recs.push_back(Rec{name, Rec::kMain, phase, layer, group, iteration, cursor, t});
    cursor = t;
  }

  void setup_groups() {
    auto n_layers = static_cast<int>(layers.size());
    closes.assign(layers.size(), -1);
    std::vector<int> with_params;
    for (int l = n_layers - 1; l >= 0; --l) {
      if (layers[static_cast<std::size_t>(l)]->param_count() > 0) with_params.push_back(l);
    }
    // Groups in backward order; each is a contiguous slice of the flat buffer.
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
      acc += 4.0 * static_cast<double>(layers[static_cast<std::size_t>(l)]->param_count());
    }
    if (cfg.sync == SyncKind::kEasgd) members.assign(1, with_params);
    for (const auto& m : members) {
      Group g;
      g.last_layer = m.front();
      g.first_layer = m.back();
      g.range.offset = offset[static_cast<std::size_t>(g.first_layer)];
      g.range.count = offset[static_cast<std::size_t>(g.last_layer)] +
                      layers[static_cast<std::size_t>(g.last_layer)]->param_count() -
                      g.range.offset;
      for (int l : m) g.layers += (g.layers.empty() ? "" : ",") + std::to_string(l);
      closes[static_cast<std::size_t>(g.first_layer)] = static_cast<int>(groups.size());
      groups.push_back(std::move(g));
    }
  }

  void init(std::vector<std::unique_ptr<Layer>> ls) {
    layers = std::move(ls);
    std::int64_t total = 0;
    for (const auto& l : layers) {
      offset.push_back(total);
      total += l->param_count();
    }
    params.assign(static_cast<std::size_t>(total), 0.0f);
    grads.assign(params.size(), 0.0f);
    velocity.assign(params.size(), 0.0f);
    std::mt19937_64 rng(cfg.seed);
    for (std::size_t l = 0; l < layers.size(); ++l) {
      layers[l]->init_params(params.data() + offset[l], rng);
    }
    if (cfg.sync == SyncKind::kEasgd) center = params;
    int cap = std::max(cfg.batch, kEvalBatch);
    acts.resize(layers.size() + 1);
    dacts.resize(layers.size() + 1);
    for (std::size_t l = 0; l <= layers.size(); ++l) {
      std::int64_t width = l == 0 ? kInputs : layers[l - 1]->out_size();
      acts[l].assign(static_cast<std::size_t>(width * cap), 0.0f);
      if (l > 0 && l < layers.size())
        dacts[l].assign(static_cast<std::size_t>(width * cfg.batch), 0.0f);
    }
    dlogits.assign(static_cast<std::size_t>(kClasses) * static_cast<std::size_t>(cfg.batch), 0.0f);
    setup_groups();
    ExchangeConfig ec{cfg.exchange, cfg.precision, cfg.topk};
    exchange = std::make_unique<GradientExchange>(ec, [this] {
      std::vector<GroupRange> r;
      for (const auto& g : groups) r.push_back(g.range);
      return r;
    }());
    issue_ns.assign(groups.size(), 0);
    progress = [this] { exchange->progress(); };
    batch_x.assign(static_cast<std::size_t>(kInputs * cfg.batch), 0.0f);
    batch_y.assign(static_cast<std::size_t>(cfg.batch), 0);
  }

  void shuffle_epoch() {
    order.resize(static_cast<std::size_t>(batches_per_epoch));
    std::iota(order.begin(), order.end(), 0);
    // The same seed on every rank: all ranks take their part of the same global batch.
    std::mt19937_64 rng(cfg.seed * 1000003ULL + static_cast<std::uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), rng);
    pos = 0;
  }

  // Cosine decay to zero over the planned iterations (when known) settles the final accuracy, so
  // runs that differ only in rounding (P ranks vs 1) end within noise of each other.
  std::int64_t planned = 0;
  double current_lr() const {
    if (planned <= 0) return cfg.lr;
    double frac = std::min(1.0, static_cast<double>(iteration) / static_cast<double>(planned));
    return cfg.lr * 0.5 * (1.0 + std::cos(3.14159265358979323846 * frac));
  }

  void issue(int g) {
    // The collective's span starts with its issue span on the main thread.
    issue_ns[static_cast<std::size_t>(g)] = cursor;
    exchange->start(g, grads.data());
    mark("comm_issue", Phase::kComm, -1, g);
  }

  void next_batch() {
    int b = cfg.batch;
    if (pos >= batches_per_epoch) {
      ++epoch;
      shuffle_epoch();
    }
    std::int64_t first = order[static_cast<std::size_t>(pos)] * b;
    ++pos;
    std::memcpy(batch_x.data(), data.images.data() + first * kInputs,
                sizeof(float) * static_cast<std::size_t>(kInputs * b));
    std::memcpy(batch_y.data(), data.labels.data() + first,
                sizeof(std::int32_t) * static_cast<std::size_t>(b));
  }

  void dev_check(const model::Expected<void>& r) {
    if (!r.ok() && dev_status.ok()) dev_status = r.error();
  }

  void issue_device(int g) {
    auto gi = static_cast<std::size_t>(g);
    issue_ns[gi] = cursor;
    const Group& grp = groups[gi];
    std::string label = grp.first_layer == grp.last_layer
                            ? layers[static_cast<std::size_t>(grp.first_layer)]->name()
                            : "bucket " + std::to_string(g);
    // The exchange reads host memory: the group's slice comes down first (this waits for the
    // kernels that produce it), inside the issue span.
    if (dev_status.ok()) {
      dev_check(dev->download_grads(grp.range.offset, grp.range.count, grads.data(), label));
    }
    exchange->start(g, grads.data());
    issued[gi] = true;
    mark("comm_issue", Phase::kComm, -1, g);
  }

  // One BSP iteration on the device. After a device error the MPI part still runs (on stale
  // gradients) so no rank hangs; train() reports the error at the end of the epoch.
  std::int64_t step_device() {
    std::int64_t t0 = now_ns();
    cursor = t0;
    int b = cfg.batch;
    dev->set_iteration(iteration);
    next_batch();
    mark("io", Phase::kIo);
    if (dev_status.ok()) dev_check(dev->upload_batch(batch_x.data(), batch_y.data(), b));
    mark("h2d", Phase::kH2D);
    auto n_layers = static_cast<int>(layers.size());
    for (int l = 0; l < n_layers; ++l) {
      if (dev_status.ok()) dev_check(dev->forward(l, b));
      mark(layers[static_cast<std::size_t>(l)]->name().c_str(), Phase::kForward, l);
    }
    if (dev_status.ok()) dev_check(dev->loss(b));
    mark("loss", Phase::kForward, n_layers);

    bool overlap = cfg.overlap != OverlapKind::kNone;
    issued.assign(groups.size(), false);
    int next_layer = n_layers - 1;
    auto on_layer = [&](int l) {
      next_layer = l - 1;
      mark(layers[static_cast<std::size_t>(l)]->name().c_str(), Phase::kBackward, l);
      if (overlap && closes[static_cast<std::size_t>(l)] >= 0) {
        issue_device(closes[static_cast<std::size_t>(l)]);
      }
      if (overlap) exchange->progress();
    };
    if (dev_status.ok()) dev_check(dev->backward(b, on_layer));
    for (int l = next_layer; l >= 0; --l) on_layer(l);  // only after a device error
    for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
      if (!issued[static_cast<std::size_t>(g)]) issue_device(g);
    }
    for (int g = 0; g < static_cast<int>(groups.size()); ++g) exchange->wait(g);
    mark("comm_wait", Phase::kComm);
    record_comm();

    if (dev_status.ok()) {
      dev_check(dev->update(grads.data(), static_cast<float>(current_lr()),
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
    mark("update", Phase::kUpdate);
    if (tracing)
      recs.push_back(Rec{"ProfilerStep", Rec::kStep, Phase::kNone, -1, -1, iteration, t0, cursor});
    ++iteration;
    // Outside the timed iteration: hand CUPTI's buffers over so they are reused.
    if (tracing && dev_status.ok()) {
      auto ev = dev->take_events();
      if (ev) {
        dev_events.insert(dev_events.end(), std::make_move_iterator(ev->begin()),
                          std::make_move_iterator(ev->end()));
      } else {
        dev_check(ev.error());
      }
    }
    return cursor - t0;
  }

  std::int64_t step() {
    if (dev) return step_device();
    std::int64_t t0 = now_ns();
    cursor = t0;
    int b = cfg.batch;
    next_batch();
    mark("io", Phase::kIo);
    std::memcpy(acts[0].data(), batch_x.data(), sizeof(float) * batch_x.size());
    mark("h2d", Phase::kH2D);

    auto n_layers = static_cast<int>(layers.size());
    for (int l = 0; l < n_layers; ++l) {
      auto i = static_cast<std::size_t>(l);
      layers[i]->forward(params.data() + offset[i], acts[i].data(), acts[i + 1].data(), b);
      mark(layers[i]->name().c_str(), Phase::kForward, l);
    }
    loss_sum += softmax_xent(acts[layers.size()].data(), batch_y.data(), b, kClasses,
                             dlogits.data(), nullptr);
    ++loss_count;
    mark("loss", Phase::kForward, n_layers);

    bool bsp = cfg.sync == SyncKind::kBsp;
    bool overlap = bsp && cfg.overlap != OverlapKind::kNone;
    for (int l = n_layers - 1; l >= 0; --l) {
      auto i = static_cast<std::size_t>(l);
      const float* dy = l == n_layers - 1 ? dlogits.data() : dacts[i + 1].data();
      float* dx = l > 0 ? dacts[i].data() : nullptr;
      layers[i]->backward(params.data() + offset[i], acts[i].data(), acts[i + 1].data(), dy, dx,
                          grads.data() + offset[i], b, overlap ? progress : ProgressFn());
      mark(layers[i]->name().c_str(), Phase::kBackward, l);
      if (overlap && closes[i] >= 0) issue(closes[i]);
      if (overlap) exchange->progress();
    }
    if (bsp) {
      if (!overlap) issue(0);
      for (int g = 0; g < static_cast<int>(groups.size()); ++g) exchange->wait(g);
      mark("comm_wait", Phase::kComm);
      record_comm();
    }

    auto lr = static_cast<float>(current_lr());
    auto mom = static_cast<float>(cfg.momentum);
    std::size_t n = params.size();
    for (std::size_t k = 0; k < n; ++k) {
      velocity[k] = mom * velocity[k] + grads[k];
      params[k] -= lr * velocity[k];
    }
    mark("update", Phase::kUpdate);

    if (!bsp && (iteration + 1) % cfg.easgd_tau == 0) {
      issue_ns[0] = cursor;
      elastic_average(*exchange, params.data(), center.data(),
                      static_cast<std::int64_t>(params.size()), cfg.easgd_alpha, scratch);
      mark("comm_wait", Phase::kComm, -1, 0);
      record_comm();
    }
    if (tracing)
      recs.push_back(Rec{"ProfilerStep", Rec::kStep, Phase::kNone, -1, -1, iteration, t0, cursor});
    ++iteration;
    return cursor - t0;
  }

  void record_comm() {
    if (!tracing) return;
    for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
      recs.push_back(Rec{exchange->collective(), Rec::kComm, Phase::kComm,
                         groups[static_cast<std::size_t>(g)].first_layer ==
                                 groups[static_cast<std::size_t>(g)].last_layer
                             ? groups[static_cast<std::size_t>(g)].first_layer
                             : -1,
                         g, iteration, issue_ns[static_cast<std::size_t>(g)],
                         exchange->completed_ns(g)});
      if (cfg.sync == SyncKind::kEasgd) break;
    }
  }

  // Test loss and accuracy of this rank's test shard, summed over ranks.
  std::pair<double, double> evaluate(const Dataset& test) {
    const float* p = cfg.sync == SyncKind::kEasgd ? center.data() : params.data();
    double loss = 0;
    std::int64_t correct = 0;
    if (dev) {
      dev->set_iteration(-1);
      if (dev_status.ok()) {
        auto r = dev->evaluate(test.images.data(), test.labels.data(), test.count);
        if (r) {
          loss = r->first;
          correct = r->second;
        } else {
          dev_check(r.error());
        }
      }
    }
    for (std::int64_t s = 0; s < (dev ? 0 : test.count); s += kEvalBatch) {
      int nb = static_cast<int>(std::min<std::int64_t>(kEvalBatch, test.count - s));
      std::memcpy(acts[0].data(), test.images.data() + s * kInputs,
                  sizeof(float) * static_cast<std::size_t>(nb * kInputs));
      for (std::size_t l = 0; l < layers.size(); ++l) {
        layers[l]->forward(p + offset[l], acts[l].data(), acts[l + 1].data(), nb);
      }
      std::int64_t hits = 0;
      loss += nb * softmax_xent(acts[layers.size()].data(), test.labels.data() + s, nb, kClasses,
                                nullptr, &hits);
      correct += hits;
    }
    double sums[3] = {loss, static_cast<double>(correct), static_cast<double>(test.count)};
    MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return {sums[0] / sums[2], sums[1] / sums[2]};
  }

  model::Expected<void> write_trace(const std::string& path, const ClockAlignment& align,
                                    std::int64_t base) {
    auto w = trace::TraceWriter::open(path, trace::DistributedInfo{rank, size, "mpi"}, base);
    if (!w) return w.error();
    auto at = [&](std::int64_t local) { return align.to_global(local) - base; };
    std::vector<trace::Event> evs;
    evs.reserve(recs.size() + 8);
    // Comm spans may overlap in time: pack them greedily onto lanes (tids 1, 2, ...) so every
    // thread track holds properly nested slices, as Perfetto requires.
    std::vector<std::size_t> comm;
    for (std::size_t i = 0; i < recs.size(); ++i) {
      if (recs[i].kind == Rec::kComm) comm.push_back(i);
    }
    std::stable_sort(comm.begin(), comm.end(),
                     [&](std::size_t a, std::size_t c) { return recs[a].start < recs[c].start; });
    std::vector<std::int64_t> lane_end;
    std::vector<int> lane(recs.size(), 0);
    for (std::size_t i : comm) {
      std::size_t k = 0;
      while (k < lane_end.size() && lane_end[k] > recs[i].start) ++k;
      if (k == lane_end.size()) lane_end.push_back(0);
      lane_end[k] = recs[i].end;
      lane[i] = static_cast<int>(k) + 1;
    }
    for (std::size_t i = 0; i < recs.size(); ++i) {
      const Rec& r = recs[i];
      trace::Event e;
      e.pid = rank;
      e.ts = at(r.start);
      e.dur = at(r.end) - e.ts;
      if (r.kind == Rec::kStep) {
        e.name = "ProfilerStep#" + std::to_string(r.iteration);
        e.cat = trace::cat::kUserAnnotation;
        e.add(trace::arg::kIteration, r.iteration);
        evs.push_back(std::move(e));
        continue;
      }
      e.name = r.name;
      e.cat = trace::cat::kCpuOp;
      e.tid = r.kind == Rec::kComm ? lane[i] : 0;
      e.add(trace::arg::kPhase, std::string(trace::phase_name(r.phase)));
      e.add(trace::arg::kIteration, r.iteration);
      if (r.layer >= 0) e.add(trace::arg::kLayer, std::int64_t{r.layer});
      if (r.group >= 0) {
        const Group& g = groups[static_cast<std::size_t>(r.group)];
        e.add("bucket", std::int64_t{r.group});
        e.add("layers", g.layers);
        e.add(trace::arg::kCollective, std::string(exchange->collective()));
        if (r.kind == Rec::kComm) {
          e.add(trace::arg::kBytes, exchange->wire_bytes(r.group));
          e.add(trace::arg::kAlgorithm, std::string(exchange->algorithm()));
          e.add("precision", std::string(precision_name(cfg.precision)));
        }
      }
      evs.push_back(std::move(e));
    }
    // Device events: onto rank 0's clock like the spans; pid = rank, GPU streams and CUDA API
    // threads on their own tids (docs/runtime.md, "--device cuda").
    std::map<std::int64_t, std::int64_t> api_tid;
    std::map<std::int64_t, std::int64_t> stream_tid;
    for (auto& e : dev_events) {
      if (e.ph == 'M') continue;
      bool gpu = e.cat == trace::cat::kKernel || e.cat == trace::cat::kGpuMemcpy ||
                 e.cat == trace::cat::kGpuMemset || e.cat == trace::cat::kCudaSync ||
                 (e.cat == trace::cat::kAc2g && e.ph == 'f');
      e.ts = at(e.ts);
      e.pid = rank;
      if (gpu) {
        stream_tid.emplace(kGpuStreamTid + e.tid, e.tid);
        e.tid = kGpuStreamTid + e.tid;
      } else {
        auto it = api_tid.emplace(e.tid, kCudaApiTid + static_cast<std::int64_t>(api_tid.size()));
        e.tid = it.first->second;
      }
      evs.push_back(std::move(e));
    }
    dev_events.clear();
    std::stable_sort(evs.begin(), evs.end(), [](const trace::Event& a, const trace::Event& c) {
      return a.ts != c.ts ? a.ts < c.ts : a.dur > c.dur;
    });
    auto meta = [&](std::int64_t tid, const char* what, const std::string& value) {
      trace::Event m;
      m.ph = 'M';
      m.name = what;
      m.pid = rank;
      m.tid = tid;
      m.add("name", value);
      w->write(m);
    };
    meta(0, "process_name", "rank " + std::to_string(rank));
    meta(0, "thread_name", "main");
    for (std::size_t k = 0; k < lane_end.size(); ++k) {
      meta(static_cast<std::int64_t>(k) + 1, "thread_name", "comm " + std::to_string(k));
    }
    for (const auto& [os_tid, tid] : api_tid) {
      meta(tid, "thread_name", "cuda api (thread " + std::to_string(os_tid) + ")");
    }
    for (const auto& [tid, stream] : stream_tid) {
      meta(tid, "thread_name", "gpu stream " + std::to_string(stream));
    }
    for (const auto& e : evs) w->write(e);
    return w->close();
  }
};

Trainer::Trainer() : impl_(std::make_unique<Impl>()) {}
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
  auto& im = *t->impl_;
  im.cfg = cfg;
  MPI_Comm_rank(MPI_COMM_WORLD, &im.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &im.size);
  im.tracing = tracing;
  im.init(std::move(*layers));
  if (cfg.device == DeviceKind::kCuda) {
    DeviceSetup ds;
    for (const auto& l : im.layers)
      ds.layers.push_back(DeviceLayer{l->name(), l->in_size(), l->out_size()});
    ds.max_batch = std::max(cfg.batch, kEvalBatch);
    ds.seed = cfg.seed;
    ds.rank = im.rank;
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &ds.local_rank);
    MPI_Comm_free(&node);
    ds.tracing = tracing;
    auto dev = make_cuda_backend(ds);
    if (!dev) return dev.error();
    im.dev = std::move(*dev);
  }
  im.data = std::move(train_set);
  im.batches_per_epoch = im.data.count / cfg.batch;
  if (im.batches_per_epoch < 1) {
    return model::Error{"--batch " + std::to_string(cfg.batch) + " is larger than this rank's " +
                        std::to_string(im.data.count) + " training samples"};
  }
  im.shuffle_epoch();
  return t;
}

std::int64_t Trainer::step() { return impl_->step(); }
std::int64_t Trainer::events_recorded() const {
  return static_cast<std::int64_t>(impl_->recs.size());
}

namespace {

model::Expected<void> prepare_run_dir(const std::string& dir, bool force) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) return model::Error{"--trace '" + dir + "' is not a directory"};
    bool empty = fs::is_empty(dir, ec);
    if (!empty && !force) {
      return model::Error{"--trace '" + dir +
                          "' exists and is not empty (use --force to overwrite)"};
    }
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::string name = entry.path().filename().string();
      if (name == trace::kManifestName || name.rfind("rank-", 0) == 0) fs::remove(entry.path(), ec);
    }
    return model::ok();
  }
  fs::create_directories(dir, ec);
  if (ec) return model::Error{"--trace '" + dir + "': cannot create: " + ec.message()};
  return model::ok();
}

// One fixed-length string per rank, gathered on rank 0 (empty elsewhere).
std::vector<std::string> gather_strings(const std::string& mine, int rank, int size) {
  constexpr int kLen = 256;
  std::array<char, kLen> buf{};
  mine.copy(buf.data(), kLen - 1);
  std::vector<char> all(static_cast<std::size_t>(kLen * size), '\0');
  MPI_Gather(buf.data(), kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank == 0) {
    for (int r = 0; r < size; ++r)
      out.emplace_back(all.data() + static_cast<std::ptrdiff_t>(r) * kLen);
  }
  return out;
}

// Where each rank ran (manifest hosts, machines, cpus), gathered on rank 0.
struct Placement {
  std::vector<std::string> hosts;
  std::vector<std::string> machines;
  std::vector<int> cpus;
};

Placement gather_placement(int rank, int size) {
  Placement p;
  std::array<char, MPI_MAX_PROCESSOR_NAME> name{};
  int len = 0;
  MPI_Get_processor_name(name.data(), &len);
  p.hosts = gather_strings(std::string(name.data(), static_cast<std::size_t>(len)), rank, size);
  // The boot id is the kernel's: network and UTS namespaces (the emulated cluster's hosts) share
  // it, other machines do not.
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  if (boot_id.empty()) boot_id = std::string(name.data(), static_cast<std::size_t>(len));
  p.machines = gather_strings(boot_id, rank, size);
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0
                 ? CPU_COUNT(&set)
                 : static_cast<int>(std::thread::hardware_concurrency());
  cpus = std::max(1, cpus);
  p.cpus.assign(rank == 0 ? static_cast<std::size_t>(size) : 0, 0);
  MPI_Gather(&cpus, 1, MPI_INT, rank == 0 ? p.cpus.data() : nullptr, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return p;
}

std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * f);
  return buf;
}

}  // namespace

model::Expected<TrainResult> train(const TrainConfig& cfg, const std::vector<std::string>& argv,
                                   const LogFn& log) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto say = [&](const std::string& s) {
    if (rank == 0 && log) log(s);
  };
  DAGSGD_TRY(agree(validate(cfg)));
  if (cfg.device == DeviceKind::kCuda) {
    // The model's shape first: a network file the GPU cannot run is refused on any machine.
    auto ls = build_model(cfg);
    model::Expected<void> shape = model::ok();
    if (!ls) {
      shape = ls.error();
    } else if (auto fc = fc_layers_for_device(std::move(*ls), cfg.model); !fc) {
      shape = fc.error();
    }
    DAGSGD_TRY(agree(shape));
    DAGSGD_TRY(agree(probe_cuda_device()));
  }
  ClockSample clock_start = measure_clock_offset();

  bool tracing = !cfg.trace_dir.empty();
  if (tracing) {
    DAGSGD_TRY(agree(rank == 0 ? prepare_run_dir(cfg.trace_dir, cfg.force) : model::ok()));
  }

  // Each rank reads its own shard of the training set and of the test set.
  model::Expected<Dataset> train_set = model::Error{""};
  model::Expected<Dataset> test_set = model::Error{""};
  {
    model::Expected<void> st = model::ok();
    train_set = load_idx(cfg.data_dir, "train", rank, size, cfg.seed);
    if (train_set) {
      test_set = load_idx(cfg.data_dir, "t10k", rank, size, cfg.seed);
      if (!test_set) st = test_set.error();
    } else {
      st = train_set.error();
    }
    DAGSGD_TRY(agree(st));
  }
  if (train_set->features != kInputs || test_set->features != kInputs) {
    return model::Error{"'" + cfg.data_dir + "': images are not 28x28"};
  }
  std::int64_t train_total = train_set->count;
  MPI_Allreduce(MPI_IN_PLACE, &train_total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  std::int64_t min_shard = train_set->count;
  MPI_Allreduce(MPI_IN_PLACE, &min_shard, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);

  auto made = Trainer::create(cfg, std::move(*train_set), tracing);
  model::Expected<void> made_ok = model::ok();
  if (!made) made_ok = made.error();
  DAGSGD_TRY(agree(made_ok));
  auto& im = *(*made)->impl_;
  // Every rank runs the same number of iterations per epoch (shards differ by one sample).
  im.batches_per_epoch = min_shard / cfg.batch;
  im.shuffle_epoch();
  im.planned = std::min<std::int64_t>(cfg.iterations > 0 ? cfg.iterations : INT64_MAX,
                                      static_cast<std::int64_t>(cfg.epochs) * im.batches_per_epoch);

  std::int64_t params = static_cast<std::int64_t>(im.params.size());
  say("dagsgd train: model " + cfg.model + ", " + std::to_string(im.layers.size()) + " layers, " +
      std::to_string(params) + " parameters; " + std::to_string(size) + " rank(s), batch " +
      std::to_string(cfg.batch) + " per rank (global " + std::to_string(cfg.batch * size) + "), " +
      std::to_string(im.batches_per_epoch) + " iterations per epoch; exchange " +
      exchange_name(cfg.exchange) + ", overlap " + overlap_name(cfg) + ", precision " +
      precision_name(cfg.precision) +
      (cfg.topk > 0 ? ", topk " + config_map(cfg, size)["topk"] : "") + ", sync " + sync_name(cfg) +
      ", " + std::to_string(im.groups.size()) + " gradient group(s)" +
      (im.dev ? "; device " + im.dev->describe() + " (rank 0)" : ""));

  // ts = 0 in every rank's trace is rank 0's clock when training starts.
  std::int64_t base = now_ns();
  MPI_Bcast(&base, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  TrainResult result;
  std::vector<double> times;
  std::int64_t limit = cfg.iterations > 0 ? cfg.iterations : INT64_MAX;
  for (int e = 1; e <= cfg.epochs && im.iteration < limit; ++e) {
    im.epoch = e - 1;
    im.shuffle_epoch();
    im.loss_sum = 0;
    im.loss_count = 0;
    std::int64_t t_epoch = now_ns();
    for (std::int64_t b = 0; b < im.batches_per_epoch && im.iteration < limit; ++b) {
      times.push_back(model::to_seconds(im.step()));
    }
    if (im.dev) DAGSGD_TRY(agree(im.dev_status));
    EpochResult er;
    er.epoch = e;
    er.seconds = model::to_seconds(now_ns() - t_epoch);
    er.iterations = im.iteration;
    double ls[2] = {im.loss_sum, static_cast<double>(im.loss_count)};
    MPI_Allreduce(MPI_IN_PLACE, ls, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    er.train_loss = ls[1] > 0 ? ls[0] / ls[1] : 0;
    if (cfg.evaluate) {
      auto [tl, acc] = im.evaluate(*test_set);
      er.test_loss = tl;
      er.test_accuracy = acc;
      if (im.dev) DAGSGD_TRY(agree(im.dev_status));
    }
    char line[256];
    std::snprintf(line, sizeof line, "epoch %d: %lld iterations, train loss %.4f", e,
                  static_cast<long long>(er.iterations), er.train_loss);
    std::string msg = line;
    if (cfg.evaluate) {
      std::snprintf(line, sizeof line, ", test loss %.4f, test accuracy %s", er.test_loss,
                    percent(er.test_accuracy).c_str());
      msg += line;
    }
    std::snprintf(line, sizeof line, ", %.2f s", er.seconds);
    msg += line;
    say(msg);
    result.epochs.push_back(er);
  }
  result.iterations = im.iteration;
  result.iteration_stats.warmup = static_cast<int>(
      std::min<std::int64_t>(cfg.warmup, std::max<std::int64_t>(0, im.iteration - 1)));
  result.iteration_stats.times_s = times;
  trace::compute_stats(result.iteration_stats);
  {
    char line[160];
    std::snprintf(line, sizeof line,
                  "iteration time (rank 0, %d warm-up excluded): mean %.3f ms, "
                  "p50 %.3f ms, p95 %.3f ms",
                  result.iteration_stats.warmup, 1e3 * result.iteration_stats.mean_s,
                  1e3 * result.iteration_stats.p50_s, 1e3 * result.iteration_stats.p95_s);
    say(line);
  }

  ClockAlignment align(clock_start);
  align.set_end(measure_clock_offset());
  double residual = static_cast<double>(align.residual_ns());
  MPI_Allreduce(MPI_IN_PLACE, &residual, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  Placement placement = gather_placement(rank, size);
  if (!tracing) return result;

  if (im.dev) {
    auto last = im.dev->finish_events();
    if (last) {
      im.dev_events.insert(im.dev_events.end(), std::make_move_iterator(last->begin()),
                           std::make_move_iterator(last->end()));
    }
    DAGSGD_TRY(agree(last ? model::ok() : model::Expected<void>(last.error())));
  }
  std::string path = cfg.trace_dir + "/" + trace::rank_trace_name(rank);
  DAGSGD_TRY(agree(im.write_trace(path, align, base)));
  model::Expected<void> wrote = model::ok();
  if (rank == 0) {
    trace::RunManifest m;
    m.tool_version = model::tool_version();
    m.kind = "train";
    m.command = argv;
    m.ranks = size;
    m.hosts = placement.hosts;
    m.machines = placement.machines;
    m.cpus = placement.cpus;
    m.model = cfg.model;
    m.config = config_map(cfg, size);
    m.config["gradient_groups"] = std::to_string(im.groups.size());
    m.config["parameters"] = std::to_string(params);
    if (im.dev) m.config["device_name"] = im.dev->describe();
    if (cfg.evaluate && !result.epochs.empty()) {
      m.config["final_test_accuracy"] = std::to_string(result.epochs.back().test_accuracy);
    }
    m.iterations = result.iteration_stats;
    m.clock_residual_ns = residual;
    for (int r = 0; r < size; ++r) m.traces.push_back(trace::rank_trace_name(r));
    wrote = trace::write_manifest(cfg.trace_dir, m);
  }
  DAGSGD_TRY(agree(wrote));
  result.run_dir = cfg.trace_dir;
  say("trace: " + cfg.trace_dir + " (manifest.json, " + std::to_string(size) + " rank trace(s))");
  return result;
}

}  // namespace dagsgd::runtime
