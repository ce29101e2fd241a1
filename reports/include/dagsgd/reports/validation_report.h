// Rendering `dagsgd validate`'s results: the table people read (modes side by side per pair
// of fabrics) and validation.json (docs/validation.md).
#pragma once

#include <string>
#include <vector>

#include "dagsgd/sim/validation.h"

namespace dagsgd::reports {

struct ValidationProfile {
  std::string name;
  std::string tc_rate;
  double rate_gbps = 0;
  double latency_us = 0;
};

struct ValidationReport {
  int cores = 0;
  int iterations = 0;
  int warmup = 0;
  int batch = 0;
  int ranks_per_host = 1;
  int repeats = 1;  // training runs per configuration (`measured` holds each one's medians)
  bool host_cpu_model = true;
  std::string network_model = "flow";
  std::vector<ValidationProfile> profiles;
  std::vector<sim::MeasuredRun> measured;
  std::vector<sim::ValidationPrediction> predictions;
  std::vector<std::string> problems;
  double wall_s = 0;
};

// Where a prediction's replay report goes below the output directory:
// "predictions/replay_<source profile>_to_<target profile>_p<ranks>_<overlap>_<model>_<mode>.json".
std::string validation_replay_file(const std::vector<sim::MeasuredRun>& runs,
                                   const sim::ValidationPrediction& p);

// One line per (source, target, configuration) with every mode's prediction and its error, then
// a summary line per mode.
std::string validation_table(const ValidationReport& r);
std::string validation_json(const ValidationReport& r);

}  // namespace dagsgd::reports
