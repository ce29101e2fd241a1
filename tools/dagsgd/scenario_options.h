// The one option group that describes a scenario (workload, hardware, exchange), shared by
// predict, whatif and replay: every scenario flag is declared here once, with one help text.
#pragma once

#include <initializer_list>
#include <string>

#include <CLI/CLI.hpp>

#include "dagsgd/model/expected.h"
#include "dagsgd/sim/scenario.h"
#include "dagsgd/sim/sweep.h"

namespace dagsgd::tools {

// Which command the flags are for: predict takes one scenario, whatif lists to sweep, replay a
// target for a traced run.
enum class ScenarioUse { kPredict, kWhatif, kReplay };

struct ScenarioFlags {
  sim::NetworkSpec network;
  sim::HardwareSpec hardware;
  sim::ExchangeSpec exchange;
  sim::SweepGrid grid;      // whatif's lists (fabrics, GPU counts, strategies)
  std::string fabric_file;  // extra fabric definitions
  int gpus = 0;             // replay's --gpus: the job the traced ranks stand for (0: as traced)
  const CLI::App* app = nullptr;
  // Whether `flag` (e.g. "--network") appeared on the command line.
  bool given(const std::string& flag) const;
  // "<flag><why>" for the first of `flags` given, else ok.
  model::Expected<void> refuse(std::initializer_list<const char*> flags,
                               const std::string& why) const;
};

void add_scenario_flags(CLI::App& app, ScenarioFlags& f, ScenarioUse use);

// The catalogs with --fabric-file's fabrics.
model::Expected<sim::Catalogs> load_catalogs(const ScenarioFlags& f);

// GPUs per node: --gpus-per-node, else the --topology node type's, else `otherwise`.
model::Expected<int> gpus_per_node(const ScenarioFlags& f, int otherwise);

}  // namespace dagsgd::tools
