// Strategy flag parsing and validation for `dagsgd train` (strict: trailing junk is an error).
#include "dagsgd/runtime/train_config.h"

#include <charconv>
#include <cmath>
#include <limits>
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

// The names of an enum's values, in the order the flag's help lists them.
template <class E>
struct Choice {
  E value;
  const char* name;
};
constexpr Choice<ExchangeKind> kExchanges[] = {{ExchangeKind::kAllreduce, "allreduce"},
                                               {ExchangeKind::kPs, "ps"},
                                               {ExchangeKind::kAsa, "asa"},
                                               {ExchangeKind::kRsag, "rsag"}};
constexpr Choice<Precision> kPrecisions[] = {{Precision::kFp32, "fp32"},
                                             {Precision::kFp16, "fp16"}};
constexpr Choice<DeviceKind> kDevices[] = {{DeviceKind::kCpu, "cpu"}, {DeviceKind::kCuda, "cuda"}};

template <class E, std::size_t N>
model::Expected<E> parse_choice(const char* flag, const char* what, const std::string& s,
                                const Choice<E> (&choices)[N]) {
  std::string valid;
  for (const auto& c : choices) {
    if (s == c.name) return c.value;
    valid += (valid.empty() ? "" : ", ") + std::string(c.name);
  }
  return model::Error{std::string(flag) + ": unknown " + what + " '" + s + "' (valid: " + valid +
                      ")"};
}

template <class E, std::size_t N>
const char* choice_name(E value, const Choice<E> (&choices)[N]) {
  for (const auto& c : choices) {
    if (c.value == value) return c.name;
  }
  return "?";
}

// An integer flag in [lo, hi]; "" leaves `out` as it is.
template <class T>
model::Expected<void> integer_flag(const char* flag, const std::string& text, T lo, T hi, T& out) {
  if (text.empty()) return model::ok();
  T v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && (v < lo || v > hi))) {
    return model::Error{std::string(flag) + ": '" + text + "' is out of range (" +
                        std::to_string(lo) + ".." + std::to_string(hi) + ")"};
  }
  if (ec != std::errc() || p != text.data() + text.size()) {
    return model::Error{std::string(flag) + ": '" + text + "' is not an integer"};
  }
  out = v;
  return model::ok();
}

// A finite real flag; `in_range` says what else it must be, `range` how to say it.
template <class InRange>
model::Expected<void> real_flag(const char* flag, const std::string& text, InRange in_range,
                                const char* range, double& out) {
  if (text.empty()) return model::ok();
  double v = 0;
  if (!parse_double(text, v)) {
    return model::Error{std::string(flag) + ": '" + text + "' is not a finite number"};
  }
  if (!in_range(v)) return model::Error{std::string(flag) + ": '" + text + "' must be " + range};
  out = v;
  return model::ok();
}

}  // namespace

model::Expected<TrainConfig> config_from_flags(const TrainFlags& f,
                                               const std::vector<std::string>& extras) {
  if (!extras.empty()) {
    return model::Error{"train: unexpected argument '" + extras.front() +
                        "' (run 'dagsgd train --help')"};
  }
  TrainConfig c;
  c.model = f.model;
  if (c.model.empty()) return model::Error{"--model must not be empty (mlp, cnn or a file)"};
  if (!f.widths.empty()) {
    if (c.model != "mlp") return model::Error{"--widths applies to --model mlp only"};
    auto w = parse_widths(f.widths);
    if (!w) return w.error();
    c.widths = *w;
  }
  DAGSGD_TRY(integer_flag("--epochs", f.epochs, 1, kMaxEpochs, c.epochs));
  DAGSGD_TRY(integer_flag<std::int64_t>("--iterations", f.iterations, 1,
                                        std::numeric_limits<std::int64_t>::max(), c.iterations));
  DAGSGD_TRY(integer_flag("--batch", f.batch, 1, 65536, c.batch));
  DAGSGD_TRY(real_flag(
      "--lr", f.lr, [](double v) { return v > 0; }, "positive", c.lr));
  DAGSGD_TRY(real_flag(
      "--momentum", f.momentum, [](double v) { return v >= 0 && v < 1; }, "in [0, 1)", c.momentum));
  DAGSGD_TRY(integer_flag<std::uint64_t>("--seed", f.seed, 0,
                                         std::numeric_limits<std::uint64_t>::max(), c.seed));
  DAGSGD_TRY(real_flag(
      "--topk", f.topk, [](double v) { return v > 0 && v <= 1; }, "in (0, 1]", c.topk));
  DAGSGD_TRY(integer_flag("--warmup", f.warmup, 0, std::numeric_limits<int>::max(), c.warmup));
  // With only --iterations, run as many epochs as it takes.
  if (!f.iterations.empty() && f.epochs.empty()) c.epochs = kUnlimitedEpochs;
  auto ex = parse_exchange(f.exchange);
  if (!ex) return ex.error();
  c.exchange = *ex;
  DAGSGD_TRY(parse_overlap(f.overlap, c));
  auto pr = parse_precision(f.precision);
  if (!pr) return pr.error();
  c.precision = *pr;
  DAGSGD_TRY(parse_sync(f.sync, c));
  c.trace_dir = f.trace;
  c.force = f.force;
  if (f.force && f.trace.empty()) return model::Error{"--force needs --trace DIR"};
  if (!f.data.empty()) c.data_dir = f.data;
  c.evaluate = !f.no_eval;
  auto dev = parse_device(f.device);
  if (!dev) return dev.error();
  c.device = *dev;
  DAGSGD_TRY(validate(c));
  return c;
}

model::Expected<ExchangeKind> parse_exchange(const std::string& s) {
  return parse_choice("--exchange", "strategy", s, kExchanges);
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
  return parse_choice("--precision", "precision", s, kPrecisions);
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
        tau > kMaxEasgdTau || !parse_double(rest.substr(comma + 1), alpha) || alpha <= 0 ||
        alpha >= 1) {
      return model::Error{"--sync: '" + s + "' must be easgd:TAU,ALPHA with an integer TAU in 1.." +
                          std::to_string(kMaxEasgdTau) + " and 0 < ALPHA < 1"};
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
  return parse_choice("--device", "device", s, kDevices);
}

bool cuda_support() {
#ifdef DAGSGD_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

model::Expected<void> validate(const TrainConfig& cfg) {
  // Written so that NaN fails every check.
  if (cfg.epochs < 1 || cfg.epochs > kUnlimitedEpochs) {
    return model::Error{"--epochs must be in 1.." + std::to_string(kMaxEpochs)};
  }
  if (cfg.iterations < 0) return model::Error{"--iterations must be at least 1"};
  if (cfg.batch < 1 || cfg.batch > 65536) return model::Error{"--batch must be in 1..65536"};
  if (!(cfg.lr > 0 && std::isfinite(cfg.lr))) {
    return model::Error{"--lr must be a positive finite number"};
  }
  if (!(cfg.momentum >= 0 && cfg.momentum < 1)) return model::Error{"--momentum must be in [0, 1)"};
  if (!(cfg.topk >= 0 && cfg.topk <= 1)) return model::Error{"--topk must be in (0, 1]"};
  if (cfg.easgd_tau < 1 || cfg.easgd_tau > kMaxEasgdTau || !(cfg.easgd_alpha > 0) ||
      !(cfg.easgd_alpha < 1)) {
    return model::Error{"--sync easgd:TAU,ALPHA needs TAU in 1.." + std::to_string(kMaxEasgdTau) +
                        " and 0 < ALPHA < 1"};
  }
  if (cfg.overlap == OverlapKind::kBucket &&
      !(cfg.bucket_mib > 0 && std::isfinite(cfg.bucket_mib))) {
    return model::Error{"--overlap bucket:MB needs a positive finite MB"};
  }
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

const char* exchange_name(ExchangeKind k) { return choice_name(k, kExchanges); }

const char* precision_name(Precision p) { return choice_name(p, kPrecisions); }

const char* device_name(DeviceKind d) { return choice_name(d, kDevices); }

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
  m["epochs"] = cfg.epochs >= kUnlimitedEpochs ? "unlimited" : std::to_string(cfg.epochs);
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
