// The options that describe one S-SGD scenario (shared by predict and, later, whatif).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "dagsgd/model/expected.h"
#include "dagsgd/reports/predict_report.h"
#include "dagsgd/sim/predict.h"

namespace dagsgd::tools {

struct ScenarioOptions {
  std::string network;
  int batch = 64;
  std::string gpu = "v100";
  int nodes = 1;
  int gpus_per_node = 1;
  std::string intra = "pcie3";
  std::string inter = "10gbe";
  std::string algorithm = "auto";
  std::string overlap = "wfbp";
  std::string precision = "fp32";
  double topk = 0;
  std::string sync = "bsp";
  double step_time = 0;  // seconds; 0 = from FLOPs
  std::string layer_profile;
  std::string fabric_file;
  std::string prefetch = "on";
  double io_time = 0;  // seconds per batch
  int iterations = 3;
};

void add_scenario_options(CLI::App& app, ScenarioOptions& o);

struct BuiltScenario {
  sim::PredictRequest request;
  reports::Scenario description;
};

// Resolves names against the catalogs and builds the request; errors are bad input.
model::Expected<BuiltScenario> build_scenario(const ScenarioOptions& o);

}  // namespace dagsgd::tools
