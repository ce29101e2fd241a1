// A whole calibration from what a user names (benchmark logs, the fit's settings, and for a
// stack fit the base stack and the link it ran on): settings checked, logs read, link looked up,
// fit made. What `dagsgd calibrate` runs; the notes it should tell the user come back beside.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/flag_table.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/sim/calibrate.h"

namespace dagsgd::sim {

struct CalibrationRequest {
  std::vector<std::string> logs;
  // Instead of logs, for a stack fit: a traced run whose own collectives stand for them
  // (sim/calibrate_trace.h); the call then defaults to the stack framework's.
  std::string trace;
  int ranks = 0;                   // of the one log; 0: each log's file name, else its text
  std::string statistic = "auto";  // auto, avg, max (LatencyStatistic)
  bool no_step = false;            // fit alpha and beta only, without an eager/rendezvous step
  std::string name;                // the entry's (or fitted stack's) name; "" = a default
  std::string description;
  // A fabric fit (EntrySettings).
  std::string algorithm = "ring";
  std::string scope = "inter";
  double nominal_gbps = 0;
  bool no_measured = false;
  // A stack fit, when `stack` (a bundled stack or a stack file) is set: `link` is the catalog
  // fabric (or one of `fabric_file`) the benchmark crossed.
  std::string stack;
  std::string link;
  std::string fabric_file;
  int ranks_per_node = 1;
  std::string call = "allreduce";
  // The settings given explicitly, as the flags of calibration_flags() name them: one that
  // belongs to the other kind of fit is refused, even at its default value. Messages name each
  // setting by its flag.
  std::vector<std::string> given;
};

struct CalibrationRun {
  std::vector<BenchmarkLog> logs;
  std::optional<LogCalibration> fabric;      // a fabric fit
  std::optional<StackLogCalibration> stack;  // a stack fit
  // What a fit writes: the fabric entry, or the fitted stack's file.
  std::string entry_json() const;
};

// Runs the request against `catalog` (where a stack fit's link is looked up). `notes` gets the
// lines worth telling beside the result ("note: ...", "warning: ..."), also when it fails.
// The flags of `dagsgd calibrate` (model/flag_table.h; its logs are the positional "logs").
const std::vector<model::FlagSpec<CalibrationRequest>>& calibration_flags();

model::Expected<CalibrationRun> run_calibration(const CalibrationRequest& request,
                                                const model::HardwareCatalog& catalog,
                                                std::vector<std::string>& notes);

}  // namespace dagsgd::sim
