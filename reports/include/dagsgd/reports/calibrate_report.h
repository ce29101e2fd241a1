// Rendering a fabric calibration (sim/calibrate.h) for people (text) and machines (JSON).
#pragma once

#include <string>
#include <vector>

#include "dagsgd/sim/calibrate.h"
#include "dagsgd/sim/calibrate_run.h"

namespace dagsgd::reports {

// The fit, its residuals per point and the entry. `no_step`: the step was not looked for.
std::string calibration_text(const sim::LogCalibration& c, const std::string& algorithm,
                             bool no_step, const std::string& written_to);
// One JSON object: logs, benchmark, ranks, algorithm, statistic, alpha/beta/step, residuals,
// points and the entry ("fabric").
std::string calibration_json(const sim::LogCalibration& c, const std::vector<std::string>& logs,
                             const std::string& algorithm, const std::string& written_to);

// A transfer calibration: the link, the fitted library values, residuals per point (with the
// algorithm the stack used) and the stack file.
std::string stack_calibration_text(const sim::StackLogCalibration& c,
                                   const std::string& written_to);
std::string stack_calibration_json(const sim::StackLogCalibration& c,
                                   const std::vector<std::string>& logs,
                                   const std::string& written_to);

// What `dagsgd calibrate` prints for a calibration run (sim::run_calibration) of request `r`: one
// of the above, text or JSON, for its fabric or stack fit.
std::string calibration_report(const sim::CalibrationRun& run, const sim::CalibrationRequest& r,
                               bool json, const std::string& written_to);

}  // namespace dagsgd::reports
