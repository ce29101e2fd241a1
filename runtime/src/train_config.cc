// Strategy flag parsing and validation for `dagsgd train` (strict: trailing junk is an error).
#include "dagsgd/runtime/train_config.h"

#include <charconv>
#include <cmath>
#include <sstream>

namespace dagsgd::runtime {

namespace {

bool parse_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  std::size_t pos = 0;
  try {
    out = std::stod(s, &pos);
  } catch (...) {
    return false;
  }
  return pos == s.size() && std::isfinite(out);
}

bool parse_int(const std::string& s, std::int64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

std::string fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

model::Expected<ExchangeKind> parse_exchange(const std::string& s) {
  if (s == "allreduce") return ExchangeKind::kAllreduce;
  if (s == "ps") return ExchangeKind::kPs;
  if (s == "asa") return ExchangeKind::kAsa;
  return model::Error{"--exchange: unknown strategy '" + s + "' (valid: allreduce, ps, asa)"};
}

model::Expected<void> parse_overlap(const std::string& s, TrainConfig& cfg) {
  if (s == "none") {
    cfg.overlap = OverlapKind::kNone;
  } else if (s == "wfbp") {
    cfg.overlap = OverlapKind::kWfbp;
  } else if (s.rfind("bucket:", 0) == 0) {
    double mb = 0;
    if (!parse_double(s.substr(7), mb) || mb <= 0) {
      return model::Error{"--overlap: bucket size in '" + s + "' must be a positive number of MiB"};
    }
    cfg.overlap = OverlapKind::kBucket;
    cfg.bucket_mib = mb;
  } else {
    return model::Error{"--overlap: unknown policy '" + s + "' (valid: none, wfbp, bucket:MB)"};
  }
  return model::ok();
}

model::Expected<Precision> parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::kFp32;
  if (s == "fp16") return Precision::kFp16;
  return model::Error{"--precision: unknown precision '" + s + "' (valid: fp32, fp16)"};
}

model::Expected<void> parse_sync(const std::string& s, TrainConfig& cfg) {
  if (s == "bsp") {
    cfg.sync = SyncKind::kBsp;
    return model::ok();
  }
  if (s.rfind("easgd:", 0) == 0) {
    std::string rest = s.substr(6);
    auto comma = rest.find(',');
    std::int64_t tau = 0;
    double alpha = 0;
    if (comma == std::string::npos || !parse_int(rest.substr(0, comma), tau) || tau < 1 ||
        !parse_double(rest.substr(comma + 1), alpha) || alpha <= 0 || alpha >= 1) {
      return model::Error{"--sync: '" + s +
                          "' must be easgd:TAU,ALPHA with an integer TAU >= 1 and 0 < ALPHA < 1"};
    }
    cfg.sync = SyncKind::kEasgd;
    cfg.easgd_tau = static_cast<int>(tau);
    cfg.easgd_alpha = alpha;
    return model::ok();
  }
  return model::Error{"--sync: unknown mode '" + s + "' (valid: bsp, easgd:TAU,ALPHA)"};
}

model::Expected<std::vector<std::int64_t>> parse_widths(const std::string& s) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto comma = s.find(',', start);
    std::string item =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::int64_t w = 0;
    if (!parse_int(item, w) || w <= 0 || w > (1 << 16)) {
      return model::Error{std::string("--widths: '").append(item).append("' in '").append(s) +
                          "' is not a layer width (an integer in 1..65536)"};
    }
    out.push_back(w);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

model::Expected<DeviceKind> parse_device(const std::string& s) {
  if (s == "cpu") return DeviceKind::kCpu;
  if (s == "cuda") return DeviceKind::kCuda;
  return model::Error{"--device: unknown device '" + s + "' (valid: cpu, cuda)"};
}

bool cuda_support() {
#ifdef DAGSGD_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

model::Expected<void> validate(const TrainConfig& cfg) {
  if (cfg.epochs < 1) return model::Error{"--epochs must be at least 1"};
  if (cfg.iterations < 0) return model::Error{"--iterations must not be negative"};
  if (cfg.batch < 1 || cfg.batch > 65536) return model::Error{"--batch must be in 1..65536"};
  if (!(cfg.lr > 0)) return model::Error{"--lr must be positive"};
  if (cfg.momentum < 0 || cfg.momentum >= 1) return model::Error{"--momentum must be in [0, 1)"};
  if (cfg.topk < 0 || cfg.topk > 1) return model::Error{"--topk must be in (0, 1]"};
  if (cfg.topk > 0 && cfg.exchange != ExchangeKind::kAllreduce) {
    return model::Error{std::string("--topk exchanges indices and values with an allgather; it ") +
                        "cannot be combined with --exchange " + exchange_name(cfg.exchange)};
  }
  if (cfg.sync == SyncKind::kEasgd && (cfg.overlap != OverlapKind::kNone || cfg.topk > 0)) {
    return model::Error{
        "--sync easgd averages parameters, not gradients: use it with --overlap none and no "
        "--topk"};
  }
  if (cfg.warmup < 0) return model::Error{"--warmup must not be negative"};
  if (cfg.device == DeviceKind::kCuda) {
    if (!cuda_support()) return model::Error{"--device cuda: this build has no CUDA support"};
    if (cfg.model == "cnn") {
      return model::Error{
          "--device cuda runs fully connected models only (mlp or a FILE of fc/relu layers); "
          "--model cnn needs --device cpu"};
    }
    if (cfg.sync == SyncKind::kEasgd) {
      return model::Error{"--sync easgd runs on --device cpu only"};
    }
  }
  return model::ok();
}

const char* exchange_name(ExchangeKind k) {
  switch (k) {
    case ExchangeKind::kAllreduce:
      return "allreduce";
    case ExchangeKind::kPs:
      return "ps";
    case ExchangeKind::kAsa:
      return "asa";
  }
  return "?";
}

const char* precision_name(Precision p) { return p == Precision::kFp16 ? "fp16" : "fp32"; }

const char* device_name(DeviceKind d) { return d == DeviceKind::kCuda ? "cuda" : "cpu"; }

std::string overlap_name(const TrainConfig& cfg) {
  switch (cfg.overlap) {
    case OverlapKind::kNone:
      return "none";
    case OverlapKind::kWfbp:
      return "wfbp";
    case OverlapKind::kBucket:
      return "bucket:" + fmt(cfg.bucket_mib);
  }
  return "?";
}

std::string sync_name(const TrainConfig& cfg) {
  if (cfg.sync == SyncKind::kBsp) return "bsp";
  return "easgd:" + std::to_string(cfg.easgd_tau) + "," + fmt(cfg.easgd_alpha);
}

std::map<std::string, std::string> config_map(const TrainConfig& cfg, int ranks) {
  std::map<std::string, std::string> m;
  m["model"] = cfg.model;
  if (cfg.model == "mlp") {
    std::string w;
    for (auto x : cfg.widths) w += (w.empty() ? "" : ",") + std::to_string(x);
    m["widths"] = w;
  }
  // --iterations alone sets a huge epoch count: say what it means.
  m["epochs"] = cfg.epochs >= (1 << 20) ? "unlimited" : std::to_string(cfg.epochs);
  m["iterations"] = std::to_string(cfg.iterations);
  m["batch"] = std::to_string(cfg.batch);
  m["global_batch"] = std::to_string(static_cast<std::int64_t>(cfg.batch) * ranks);
  m["lr"] = fmt(cfg.lr);
  m["momentum"] = fmt(cfg.momentum);
  m["seed"] = std::to_string(cfg.seed);
  m["exchange"] = exchange_name(cfg.exchange);
  m["overlap"] = overlap_name(cfg);
  m["precision"] = precision_name(cfg.precision);
  m["topk"] = fmt(cfg.topk);
  m["sync"] = sync_name(cfg);
  m["device"] = device_name(cfg.device);
  m["backend"] = cfg.device == DeviceKind::kCuda ? "cuda-cublas" : "cpu-eigen";
  m["progress"] = "MPI_Test between layers and between GEMM blocks of backward";
  m["ps_server"] = "rank 0 (also trains)";
  return m;
}

}  // namespace dagsgd::runtime
