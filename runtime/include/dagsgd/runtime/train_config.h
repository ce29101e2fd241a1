// The configuration of one `dagsgd train` run, and the parsing of its strategy flags.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/flag_table.h"
#include "dagsgd/runtime/dataset.h"

namespace dagsgd::runtime {

enum class ExchangeKind { kAllreduce, kPs, kAsa, kRsag };
enum class OverlapKind { kNone, kWfbp, kBucket };
enum class Precision { kFp32, kFp16 };
enum class SyncKind { kBsp, kEasgd };
enum class DeviceKind { kCpu, kCuda };

// The largest --epochs, and the epoch count that --iterations alone stands for ("unlimited").
inline constexpr int kMaxEpochs = 1'000'000;
inline constexpr int kUnlimitedEpochs = 1 << 20;
// The largest TAU of --sync easgd:TAU,ALPHA.
inline constexpr int kMaxEasgdTau = 1'000'000;

struct TrainConfig {
  std::string model = "mlp";                   // mlp, cnn, or a network-spec file
  std::vector<std::int64_t> widths{256, 128};  // hidden widths of the mlp
  int epochs = 1;
  std::int64_t iterations = 0;  // 0: no limit (epochs decide); the flag itself must be >= 1
  int batch = 64;               // per rank
  double lr = 0.05;
  double momentum = 0.9;
  std::uint64_t seed = 1;
  ExchangeKind exchange = ExchangeKind::kAllreduce;
  OverlapKind overlap = OverlapKind::kNone;
  double bucket_mib = 0;  // for OverlapKind::kBucket
  Precision precision = Precision::kFp32;
  double topk = 0;  // 0: dense exchange; else the kept fraction in (0, 1]
  SyncKind sync = SyncKind::kBsp;
  int easgd_tau = 1;         // iterations between elastic averaging steps
  double easgd_alpha = 0.5;  // elastic moving rate
  std::string trace_dir;     // "" = no trace
  bool force = false;
  std::string data_dir = kFashionMnistDir;
  int warmup = 2;        // iterations excluded from the manifest statistics
  bool evaluate = true;  // test accuracy after every epoch and at the end
  DeviceKind device = DeviceKind::kCpu;
};

// The flags of `dagsgd train` as typed ("" = not given). They are parsed here rather than by the
// argument parser, so that a bad value is reported once, by rank 0, with the flag named.
struct TrainFlags {
  std::string model = "mlp";
  std::string widths;
  std::string epochs;
  std::string iterations;
  std::string batch;
  std::string lr;
  std::string momentum;
  std::string seed;
  std::string exchange = "allreduce";
  std::string overlap = "none";
  std::string precision = "fp32";
  std::string topk;
  std::string sync = "bsp";
  std::string trace;
  bool force = false;
  std::string data;
  std::string warmup;
  bool no_eval = false;
  std::string device = "cpu";
};

// The flags of `dagsgd train` (model/flag_table.h); their values are checked by
// config_from_flags, so every rank refuses a bad one the same way.
const std::vector<model::FlagSpec<TrainFlags>>& train_flags();

// The configuration the flags ask for, checked (validate()); `extras` are arguments no flag
// took. Errors are one line naming the flag and the value.
model::Expected<TrainConfig> config_from_flags(const TrainFlags& flags,
                                               const std::vector<std::string>& extras = {});

model::Expected<ExchangeKind> parse_exchange(const std::string& s);
// "none", "wfbp" or "bucket:MB" (MiB, > 0); fills overlap and bucket_mib.
model::Expected<void> parse_overlap(const std::string& s, TrainConfig& cfg);
model::Expected<Precision> parse_precision(const std::string& s);
// "bsp" or "easgd:TAU,ALPHA" (1 <= TAU <= kMaxEasgdTau, 0 < ALPHA < 1).
model::Expected<void> parse_sync(const std::string& s, TrainConfig& cfg);
// "256,128": positive integers.
model::Expected<std::vector<std::int64_t>> parse_widths(const std::string& s);
// "cpu" or "cuda".
model::Expected<DeviceKind> parse_device(const std::string& s);
// True when this build has the CUDA trainer (DAGSGD_HAVE_CUDA).
bool cuda_support();

// Checks the ranges and the combinations that the runtime does not support.
model::Expected<void> validate(const TrainConfig& cfg);

const char* exchange_name(ExchangeKind k);
const char* precision_name(Precision p);
const char* device_name(DeviceKind d);
std::string overlap_name(const TrainConfig& cfg);
std::string sync_name(const TrainConfig& cfg);

// The configuration as the manifest's flag -> value map.
std::map<std::string, std::string> config_map(const TrainConfig& cfg, int ranks);

}  // namespace dagsgd::runtime
