// Calibrating a fabric from collective micro-benchmark logs (OSU, nccl-tests,
// dagsgd-allreduce-bench): the link formula fitted to the latencies, and a catalog entry that
// keeps the measured curves (what `dagsgd calibrate` and `dagsgd validate` do).
#pragma once

#include <string>
#include <vector>

#include "dagsgd/model/calibration.h"
#include "dagsgd/model/expected.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/trace/osu_log.h"

namespace dagsgd::sim {

// Which latency of a log row a fit uses.
enum class LatencyStatistic {
  kAuto,  // the slowest rank's where the log has it (a replayed collective ends then), else avg
  kAvg,
  kMax,
};

// Where a log's rank count came from.
enum class RanksFrom { kGiven, kFileName, kLog, kUnknown };

struct BenchmarkLog {
  std::string path;
  trace::LatencyLog log;
  model::TimingSeries series;  // the points the fit uses (zero-byte rows left out)
  bool max = false;            // the series is the Max Latency(us) column
  RanksFrom ranks_from = RanksFrom::kUnknown;
  int zero_sized = 0;  // zero-byte rows left out
};

// Reads a log. `ranks` > 0 is the rank count; 0 takes it from the file name's trailing number
// (allreduce4.log -> 4), else from the log itself, else leaves it unknown (series.ranks 0).
model::Expected<BenchmarkLog> read_benchmark_log(const std::string& path, int ranks,
                                                 LatencyStatistic statistic);

// The logs' latencies as measured curves, one per rank count: the average rank's latency, and
// the slowest rank's where every log of that rank count has a Max column; sizes increasing, a
// size measured several times (in one log or in two of the same rank count) averaged.
std::vector<model::MeasuredAllreduce> measured_curves(const std::vector<BenchmarkLog>& logs);

struct EntrySettings {
  std::string algorithm = "ring";  // the formula fitted (model::calibration_algorithm_names())
  bool fit_step = true;            // also look for an eager/rendezvous step
  std::string name;                // "" = the logs' file stems joined by '+'
  std::string description;         // what the link is; what was fitted is appended
  std::string scope = "inter";     // intra, inter, both
  // The line rate; 0 = the fitted bandwidth. A fit above it: with the curves kept, the entry keeps
  // this line rate and caps the fitted bandwidth at it; without, the fit becomes the line rate.
  double nominal_bytes_per_s = 0;
  bool keep_measured = true;  // keep the logs' curves in the entry
  std::string command;        // what reproduces the fit, for the entry's source
};

struct LogCalibration {
  model::CalibrationResult fit;
  model::FabricSpec fabric;
  std::vector<int> ranks;  // per log
  std::string sizes;       // "266 sizes of 'a.log' (p=2), ..."
  std::string benchmark;   // the first log's benchmark name (or format)
  bool max = false;        // fitted to the slowest rank's latencies
};

// Fits the link to every log together (their rank counts known) and makes the entry.
model::Expected<LogCalibration> calibrate_logs(const std::vector<BenchmarkLog>& logs,
                                               const EntrySettings& settings);

// Transfer calibration: the logs were measured on a cluster whose links are known (fabric
// specs); what the logs add to them is the stack's (docs/communication.md).
struct StackSettings {
  model::BenchmarkSetup setup;
  bool fit_step = true;
  std::string name;         // the fitted stack's name ("" = the base's + "-calibrated")
  std::string description;  // "" = the base's, with what was fitted appended
  std::string command;      // what reproduces the fit, for the fitted fields' sources
};

struct StackLogCalibration {
  model::StackCalibrationResult fit;  // fit.stack is the fitted stack, named and sourced
  model::FabricSpec link;             // the link the benchmark crossed
  std::vector<int> ranks;             // per log
  std::string sizes;                  // "266 sizes of 'a.log' (p=2), ..."
  std::string benchmark;
  bool max = false;
};

// `inter` is the link between nodes, `intra` inside one (the one the benchmark crossed is
// fitted against; the other only prices algorithms that use it).
model::Expected<StackLogCalibration> calibrate_stack_logs(const std::vector<BenchmarkLog>& logs,
                                                          const model::FabricSpec& intra,
                                                          const model::FabricSpec& inter,
                                                          const model::StackSpec& base,
                                                          const StackSettings& settings);

}  // namespace dagsgd::sim
