// The inputs analyze, replay and export share: the traces of one run, read into a traced workload.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dagsgd/sim/scenario.h"

namespace dagsgd::tools {

struct TraceInputs {
  std::vector<std::string> paths;
  bool strict = false;
  bool json = false;
};

void add_trace_inputs(CLI::App& app, TraceInputs& in);
model::Expected<std::unique_ptr<sim::TracedWorkload>> load_traces(const TraceInputs& in);

}  // namespace dagsgd::tools
