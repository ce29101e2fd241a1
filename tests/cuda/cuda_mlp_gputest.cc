// GPU tests (ctest label gpu): device ops and CudaMlp against a double-precision CPU reference,
// and the CUPTI collector capturing the MLP's kernels with layer attribution. Skip without a GPU.
#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "dagsgd/model/io.h"
#include "dagsgd/runtime/cuda/cuda_mlp.h"
#include "dagsgd/runtime/cuda/cupti_collector.h"
#include "dagsgd/trace/trace_writer.h"

namespace dagsgd::runtime::cuda {
namespace {

#define SKIP_WITHOUT_GPU()                                     \
  do {                                                         \
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device"; \
  } while (false)

// A CPU reference MLP in double precision, same layout and semantics as CudaMlp.
struct RefMlp {
  std::vector<std::size_t> widths;
  std::vector<double> params;
  std::vector<double> grads;
  std::vector<std::vector<double>> acts;  // per layer output (after ReLU for hidden layers)
  std::vector<double> loss;
  std::vector<double> dlogits;

  explicit RefMlp(const CudaMlpConfig& cfg) {
    for (int w : cfg.widths) widths.push_back(static_cast<std::size_t>(w));
    for (float p : CudaMlp::initial_params(cfg)) params.push_back(p);
  }
  std::size_t layers() const { return widths.size() - 1; }
  std::size_t offset(std::size_t l) const {
    std::size_t o = 0;
    for (std::size_t i = 0; i < l; ++i) o += widths[i] * widths[i + 1] + widths[i + 1];
    return o;
  }

  void forward(const std::vector<double>& x, std::size_t batch) {
    acts.assign(layers(), {});
    for (std::size_t l = 0; l < layers(); ++l) {
      std::size_t in = widths[l];
      std::size_t out = widths[l + 1];
      const std::vector<double>& xin = l == 0 ? x : acts[l - 1];
      auto& y = acts[l];
      y.assign(batch * out, 0);
      const double* w = params.data() + offset(l);
      const double* b = w + in * out;
      for (std::size_t r = 0; r < batch; ++r) {
        for (std::size_t j = 0; j < out; ++j) {
          double s = b[j];
          for (std::size_t i = 0; i < in; ++i) s += xin[r * in + i] * w[j * in + i];
          if (l + 1 < layers()) s = std::max(s, 0.0);
          y[r * out + j] = s;
        }
      }
    }
  }

  void softmax_loss(const std::vector<std::size_t>& labels, std::size_t batch) {
    std::size_t c = widths.back();
    const auto& z = acts.back();
    loss.assign(batch, 0);
    dlogits.assign(batch * c, 0);
    for (std::size_t r = 0; r < batch; ++r) {
      double m = z[r * c];
      for (std::size_t k = 1; k < c; ++k) m = std::max(m, z[r * c + k]);
      double sum = 0;
      for (std::size_t k = 0; k < c; ++k) sum += std::exp(z[r * c + k] - m);
      std::size_t y = labels[r];
      loss[r] = std::log(sum) + m - z[r * c + y];
      for (std::size_t k = 0; k < c; ++k) {
        double p = std::exp(z[r * c + k] - m) / sum;
        dlogits[r * c + k] = (p - (k == y ? 1 : 0)) / static_cast<double>(batch);
      }
    }
  }

  void backward(const std::vector<double>& x, std::size_t batch) {
    grads.assign(params.size(), 0);
    std::vector<double> dy = dlogits;
    for (std::size_t l = layers(); l-- > 0;) {
      std::size_t in = widths[l];
      std::size_t out = widths[l + 1];
      if (l + 1 < layers()) {
        const auto& y = acts[l];
        for (std::size_t i = 0; i < dy.size(); ++i) {
          if (!(y[i] > 0)) dy[i] = 0;
        }
      }
      const std::vector<double>& xin = l == 0 ? x : acts[l - 1];
      double* dw = grads.data() + offset(l);
      double* db = dw + in * out;
      const double* w = params.data() + offset(l);
      std::vector<double> dx(batch * in, 0);
      for (std::size_t r = 0; r < batch; ++r) {
        for (std::size_t j = 0; j < out; ++j) {
          double g = dy[r * out + j];
          db[j] += g;
          for (std::size_t i = 0; i < in; ++i) {
            dw[j * in + i] += g * xin[r * in + i];
            dx[r * in + i] += g * w[j * in + i];
          }
        }
      }
      dy = std::move(dx);
    }
  }
};

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " [" << i << "]";
  }
}

struct Batch {
  std::vector<float> x;
  std::vector<std::int32_t> labels;
};

Batch make_batch(int batch, int in, int classes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  Batch b;
  for (int i = 0; i < batch * in; ++i) b.x.push_back(d(rng));
  for (int r = 0; r < batch; ++r) b.labels.push_back(r % classes);
  return b;
}

struct DeviceBatch {
  DeviceBuffer x;
  DeviceBuffer labels;
};

DeviceBatch upload(const CudaContext& ctx, const Batch& b) {
  DeviceBatch d;
  auto x = DeviceBuffer::allocate(b.x.size() * sizeof(float));
  auto labels = DeviceBuffer::allocate(b.labels.size() * sizeof(std::int32_t));
  EXPECT_TRUE(x.ok() && labels.ok());
  if (!x.ok() || !labels.ok()) return d;
  d.x = std::move(*x);
  d.labels = std::move(*labels);
  EXPECT_TRUE(copy_h2d(ctx, d.x.data(), b.x.data(), b.x.size() * sizeof(float)).ok());
  EXPECT_TRUE(
      copy_h2d(ctx, d.labels.data(), b.labels.data(), b.labels.size() * sizeof(std::int32_t)).ok());
  EXPECT_TRUE(ctx.synchronize().ok());
  return d;
}

TEST(CudaOps, Fp16RoundTripAndSgd) {
  SKIP_WITHOUT_GPU();
  auto ctx = CudaContext::create(0);
  ASSERT_TRUE(ctx.ok()) << ctx.error().message;
  std::vector<float> v = {0.f, 1.f, -2.5f, 0.1f, 65504.f, 1e-8f};
  auto a = DeviceBuffer::allocate(v.size() * sizeof(float));
  auto h = DeviceBuffer::allocate(v.size() * sizeof(std::uint16_t));
  auto g = DeviceBuffer::allocate(v.size() * sizeof(float));
  ASSERT_TRUE(a.ok() && h.ok() && g.ok());
  ASSERT_TRUE(copy_h2d(*ctx, a->data(), v.data(), v.size() * sizeof(float)).ok());
  ASSERT_TRUE(f32_to_f16(*ctx, a->as<float>(), h->as<std::uint16_t>(), v.size()).ok());
  std::vector<std::uint16_t> half(v.size());
  ASSERT_TRUE(copy_d2h(*ctx, half.data(), h->data(), half.size() * 2).ok());
  ASSERT_TRUE(f16_to_f32(*ctx, h->as<std::uint16_t>(), g->as<float>(), v.size()).ok());
  std::vector<float> back(v.size());
  ASSERT_TRUE(copy_d2h(*ctx, back.data(), g->data(), back.size() * sizeof(float)).ok());
  ASSERT_TRUE(ctx->synchronize().ok());
  EXPECT_EQ(half[1], 0x3c00);  // 1.0
  EXPECT_EQ(half[2], 0xc100);  // -2.5
  EXPECT_EQ(half[4], 0x7bff);  // 65504, the largest half
  EXPECT_EQ(back[0], 0.f);
  EXPECT_EQ(back[1], 1.f);
  EXPECT_EQ(back[2], -2.5f);
  EXPECT_FLOAT_EQ(back[3], 0.0999755859375f);  // nearest half to 0.1
  EXPECT_EQ(back[4], 65504.f);
  EXPECT_EQ(back[5], 0.f);  // below half's subnormal range

  // params -= lr * grads; then scale.
  ASSERT_TRUE(sgd_update(*ctx, a->as<float>(), g->as<float>(), v.size(), 0.5f).ok());
  ASSERT_TRUE(scale(*ctx, a->as<float>(), v.size(), 2.f).ok());
  std::vector<float> p(v.size());
  ASSERT_TRUE(copy_d2h(*ctx, p.data(), a->data(), p.size() * sizeof(float)).ok());
  ASSERT_TRUE(ctx->synchronize().ok());
  EXPECT_FLOAT_EQ(p[1], 2.f * (1.f - 0.5f * 1.f));
  EXPECT_FLOAT_EQ(p[2], 2.f * (-2.5f + 0.5f * 2.5f));
}

TEST(CudaMlp, ForwardBackwardUpdateMatchCpuReference) {
  SKIP_WITHOUT_GPU();
  auto ctx = CudaContext::create(0);
  ASSERT_TRUE(ctx.ok()) << ctx.error().message;
  CudaMlpConfig cfg{{5, 7, 6, 3}, 8, 11};
  auto mlp = CudaMlp::create(*ctx, cfg);
  ASSERT_TRUE(mlp.ok()) << mlp.error().message;
  const int batch = 4;
  Batch b = make_batch(batch, 5, 3, 3);
  DeviceBatch d = upload(*ctx, b);

  RefMlp ref(cfg);
  std::vector<double> x(b.x.begin(), b.x.end());
  std::vector<std::size_t> labels(b.labels.begin(), b.labels.end());
  ref.forward(x, batch);
  ref.softmax_loss(labels, batch);
  ref.backward(x, batch);

  std::vector<int> done;
  ASSERT_TRUE(mlp->forward(d.x.as<float>(), batch).ok());
  ASSERT_TRUE(mlp->loss(d.labels.as<std::int32_t>(), batch).ok());
  ASSERT_TRUE(mlp->backward(d.x.as<float>(), batch,
                            [&done](int l) -> model::Expected<void> {
                              done.push_back(l);
                              return model::ok();
                            })
                  .ok());
  EXPECT_EQ(done, (std::vector<int>{2, 1, 0}));

  std::vector<float> logits(static_cast<std::size_t>(batch * 3));
  ASSERT_TRUE(copy_d2h(*ctx, logits.data(), mlp->output(), logits.size() * sizeof(float)).ok());
  ASSERT_TRUE(ctx->synchronize().ok());
  expect_close(logits, ref.acts.back(), 1e-4, "logits");

  auto stats = mlp->read_loss(batch);
  ASSERT_TRUE(stats.ok());
  double mean = 0;
  for (double l : ref.loss) mean += l / batch;
  EXPECT_NEAR(stats->mean_loss, mean, 1e-4);

  auto grads = mlp->download_grads();
  ASSERT_TRUE(grads.ok());
  expect_close(*grads, ref.grads, 1e-4, "grads");
  // Each layer's gradient is the contiguous range the trainer sends.
  EXPECT_EQ(mlp->layer_grads(1) - mlp->grads(), static_cast<std::ptrdiff_t>(ref.offset(1)));
  EXPECT_EQ(mlp->layer_param_count(1), std::size_t{7 * 6 + 6});

  ASSERT_TRUE(mlp->update(0.1f).ok());
  auto params = mlp->download_params();
  ASSERT_TRUE(params.ok());
  std::vector<double> want = ref.params;
  for (std::size_t i = 0; i < want.size(); ++i) want[i] -= 0.1 * ref.grads[i];
  expect_close(*params, want, 1e-4, "params after update");
}

TEST(CudaMlp, LossFallsOnAFixedBatch) {
  SKIP_WITHOUT_GPU();
  auto ctx = CudaContext::create(0);
  ASSERT_TRUE(ctx.ok());
  CudaMlpConfig cfg{{16, 32, 4}, 32, 5};
  auto mlp = CudaMlp::create(*ctx, cfg);
  ASSERT_TRUE(mlp.ok());
  Batch b = make_batch(32, 16, 4, 9);
  DeviceBatch d = upload(*ctx, b);
  double first = 0;
  double last = 0;
  for (int step = 0; step < 100; ++step) {
    ASSERT_TRUE(mlp->forward(d.x.as<float>(), 32).ok());
    ASSERT_TRUE(mlp->loss(d.labels.as<std::int32_t>(), 32).ok());
    auto s = mlp->read_loss(32);
    ASSERT_TRUE(s.ok());
    if (step == 0) first = s->mean_loss;
    last = s->mean_loss;
    ASSERT_TRUE(mlp->backward(d.x.as<float>(), 32).ok());
    ASSERT_TRUE(mlp->update(0.1f).ok());
  }
  EXPECT_LT(last, 0.5 * first);
}

std::int64_t monotonic_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

TEST(CuptiCollector, CapturesMlpKernelsWithLayerAttribution) {
  SKIP_WITHOUT_GPU();
  std::int64_t base = monotonic_now();
  CuptiCollectorOptions opt;
  opt.trace_base_ns = base;
  opt.buffer_bytes = 1 << 16;  // small, so several buffers are used and reused
  auto collector = CuptiCollector::start(opt);
  ASSERT_TRUE(collector.ok()) << collector.error().message;
  auto second = CuptiCollector::start(opt);
  EXPECT_FALSE(second.ok());

  auto ctx = CudaContext::create(0);
  ASSERT_TRUE(ctx.ok());
  CudaMlpConfig cfg{{8, 16, 4}, 16, 1};
  auto mlp = CudaMlp::create(*ctx, cfg);
  ASSERT_TRUE(mlp.ok());
  mlp->set_layer_sink(collector->get());
  Batch b = make_batch(16, 8, 4, 2);
  DeviceBatch d = upload(*ctx, b);

  std::string path = ::testing::TempDir() + "/" + std::to_string(::getpid()) + "-gpu.trace.json";
  auto w = trace::TraceWriter::open(path, trace::DistributedInfo{}, base);
  ASSERT_TRUE(w.ok());
  for (int it = 0; it < 3; ++it) {
    (*collector)->set_iteration(it);
    ASSERT_TRUE(mlp->forward(d.x.as<float>(), 16).ok());
    ASSERT_TRUE(mlp->loss(d.labels.as<std::int32_t>(), 16).ok());
    ASSERT_TRUE(mlp->backward(d.x.as<float>(), 16).ok());
    ASSERT_TRUE(mlp->update(0.05f).ok());
    ASSERT_TRUE(ctx->synchronize().ok());
    ASSERT_TRUE((*collector)->flush(*w).ok());  // on demand, mid-run
  }
  auto stats = (*collector)->finish(*w);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  std::int64_t end = monotonic_now();
  ASSERT_TRUE(w->close().ok());
  collector->reset();

  EXPECT_GT(stats->events.kernels, 0);
  EXPECT_GT(stats->events.attributed, 0);
  EXPECT_EQ(stats->dropped, 0);
  EXPECT_GE(stats->buffers_allocated, 1);

  auto text = model::read_file(path);
  ASSERT_TRUE(text.ok());
  auto j = nlohmann::json::parse(*text);
  std::set<std::string> layer_phases;
  std::map<std::int64_t, int> flow_ends;
  int memcpys = 0;
  for (const auto& e : j["traceEvents"]) {
    double ts_us = e["ts"].get<double>();
    // In the trace's time base: after the collector started, before it finished.
    EXPECT_GE(ts_us, 0.0);
    EXPECT_LE(ts_us, static_cast<double>(end - base) / 1000.0 + 1.0);
    if (e["cat"] == "kernel" && e.contains("args") && e["args"].contains("layer")) {
      layer_phases.insert(e["args"]["layer"].get<std::string>() + "/" +
                          e["args"]["phase"].get<std::string>());
      EXPECT_TRUE(e["args"].contains("iteration"));
    }
    if (e["cat"] == "gpu_memcpy") ++memcpys;
    if (e["ph"] == "s") flow_ends[e["id"].get<std::int64_t>()] |= 1;
    if (e["ph"] == "f") flow_ends[e["id"].get<std::int64_t>()] |= 2;
  }
  EXPECT_TRUE(layer_phases.count("fc1/forward")) << "kernels of fc1 forward not attributed";
  EXPECT_TRUE(layer_phases.count("fc2/forward"));
  EXPECT_TRUE(layer_phases.count("fc2/backward"));
  EXPECT_TRUE(layer_phases.count("fc1/backward"));
  EXPECT_TRUE(layer_phases.count("loss/forward"));
  EXPECT_TRUE(layer_phases.count("all/update"));
  EXPECT_GT(memcpys, 0);
  ASSERT_FALSE(flow_ends.empty());
  for (const auto& [id, ends] : flow_ends) EXPECT_EQ(ends, 3) << "flow " << id << " is one-sided";
}

TEST(CuptiInjection, TracesAnyCudaProgram) {
  SKIP_WITHOUT_GPU();
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / ("inject-gpu-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // The child is this test binary running one ops test: a CUDA program we did not instrument.
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string cmd = "env -u OMPI_COMM_WORLD_RANK CUDA_INJECTION64_PATH='" +
                    std::string(DAGSGD_CUPTI_INJECT) + "' DAGSGD_CUPTI_DIR='" + dir.string() +
                    "' DAGSGD_CUPTI_FLUSH_MS=50 '" + self +
                    "' --gtest_filter=CudaOps.Fp16RoundTripAndSgd > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

  std::vector<fs::path> traces;
  for (const auto& entry : fs::directory_iterator(dir)) traces.push_back(entry.path());
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].filename().string().rfind("pid-", 0), 0u) << traces[0];
  auto text = model::read_file(traces[0].string());
  ASSERT_TRUE(text.ok());
  auto j = nlohmann::json::parse(*text);
  bool f16_kernel = false;
  int memcpys = 0;
  int runtime_calls = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["cat"] == "kernel" &&
        e["name"].get<std::string>().find("f32_to_f16_kernel") != std::string::npos) {
      f16_kernel = true;
    }
    if (e["cat"] == "gpu_memcpy") ++memcpys;
    if (e["cat"] == "cuda_runtime") ++runtime_calls;
  }
  EXPECT_TRUE(f16_kernel);
  EXPECT_GT(memcpys, 0);
  EXPECT_GT(runtime_calls, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dagsgd::runtime::cuda
