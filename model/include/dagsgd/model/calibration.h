// Fitting a link's alpha, beta and eager/rendezvous step to measured allreduce latencies, under
// the same per-algorithm formula the cost model uses (so the fit is a per-message link value).
#pragma once

#include <string>
#include <vector>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/expected.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/stack.h"
#include "dagsgd/model/units.h"

namespace dagsgd::model {

// One measurement: an allreduce of `bytes` per rank took `nanos` on average.
struct TimingPoint {
  Bytes bytes = 0;
  double nanos = 0;
};

// The measurements of one rank count (one benchmark log).
struct TimingSeries {
  int ranks = 0;  // p, at least 2
  std::vector<TimingPoint> points;
};

struct CalibrationOptions {
  std::string algorithm = "ring";  // one of calibration_algorithm_names()
  int ranks = 0;                   // p, at least 2 (the single-series overload)
  bool fit_step = true;            // also look for an eager/rendezvous step
};

struct PointFit {
  Bytes bytes = 0;
  double measured_ns = 0;
  double fitted_ns = 0;
  double relative_error = 0;  // (fitted - measured) / measured
  int ranks = 0;
  std::string algorithm;  // stack calibration: the algorithm (and "/protocol") the stack used
};

struct CalibrationResult {
  std::string algorithm;
  int ranks = 0;  // p; 0 when the series had different rank counts
  // alpha, beta, and the step (eager_limit 0: none). gamma is 0: the reduction cost grows with
  // the bytes like the wire time does, so the fitted beta includes it.
  LinkCost link;
  std::vector<PointFit> points;   // in input order
  double rms_ns = 0;              // root mean square of (fitted - measured)
  double rms_relative = 0;        // root mean square of the relative errors
  double max_relative_error = 0;  // largest |relative error|
  Bytes max_error_bytes = 0;      // the size where it occurs
  bool has_step() const { return link.eager_limit > 0; }
  double bandwidth() const;  // bytes/s, 1 / beta
};

// Weighted least squares on relative error (latencies span orders of magnitude), with alpha,
// beta and the step latency kept >= 0. The step's break point is found by trying every split
// between consecutive sizes; the step is kept only if it wins on the Bayesian information
// criterion (it costs two parameters: the break point and the extra latency).
Expected<CalibrationResult> calibrate_allreduce(const std::vector<TimingPoint>& points,
                                                const CalibrationOptions& options);
// One link fitted to several rank counts at once (options.ranks is not used): the formula must
// then explain how the time grows with p too, which tells formulas apart.
Expected<CalibrationResult> calibrate_allreduce(const std::vector<TimingSeries>& series,
                                                const CalibrationOptions& options);

// Algorithms a single log can calibrate (those whose cost uses one link class).
std::vector<std::string> calibration_algorithm_names();

// A catalog entry for the fitted link: achievable = fitted bandwidth; nominal = `nominal`
// bytes/s, or the fitted bandwidth when `nominal` is 0 or below it.
Expected<FabricSpec> fabric_from_calibration(const CalibrationResult& fit, const std::string& name,
                                             const std::string& scope,
                                             const std::string& description,
                                             const std::string& source, double nominal = 0);

// ---------------------------------------------------------------------------------------------
// Transfer calibration: the stack separated from the link (docs/communication.md).

// The layout and call of a benchmark run.
struct BenchmarkSetup {
  int ranks_per_node = 1;  // 1: every rank on its own node (the inter link); p: one node
  // The call the benchmark times: "allreduce" (OSU osu_allreduce, nccl-tests), "iallreduce",
  // "iallreduce_in_place" (dagsgd-allreduce-bench --nonblocking [--in-place]).
  std::string call = "allreduce";
};

// The latency the stack gives a p-rank allreduce of `bytes` per rank on these links (the
// library only: a micro-benchmark has no framework), and the algorithm/protocol it uses.
struct BenchmarkTime {
  double nanos = 0;
  std::string algorithm;  // "ring", or "tree/LL128" for a library with protocols
};
Expected<BenchmarkTime> stack_benchmark_time(const StackSpec& stack, const LinkCost& intra,
                                             const LinkCost& inter, const BenchmarkSetup& setup,
                                             int ranks, double bytes);

struct StackCalibrationOptions {
  BenchmarkSetup setup;
  bool fit_step = true;  // also look for an eager/rendezvous step (a protocol switch point)
};

struct StackCalibrationResult {
  // The base stack with the fitted library values; sources of the fitted fields say
  // "transfer calibration" (the caller appends how to reproduce it).
  StackSpec stack;
  std::string link_class;        // "inter" or "intra": the link the benchmark crossed
  double per_message_ns = 0;     // the library's software cost beyond the link's alpha
  double library_bandwidth = 0;  // bytes/s the library reached before protocol factors
  double link_bandwidth = 0;     // bytes/s of the link spec
  bool capped = false;           // the limit is a per-connection rate (else an efficiency)
  std::vector<PointFit> points;
  double rms_relative = 0;
  double max_relative_error = 0;
  Bytes max_error_bytes = 0;
  int iterations = 0;  // fit, re-choose algorithms, refit: until the choices are stable
};

// Fits the library's per-message cost, its bandwidth limit (a per-connection rate when the
// stack's library.bandwidth_limit says "connection", else an efficiency) and optionally an
// eager/rendezvous step to the measured latencies, the links being known (a fabric spec: rate
// and latency). The stack's own tables (or cost model) choose each point's algorithm; the fit
// is redone until those choices no longer change. Relative least squares, values >= 0.
Expected<StackCalibrationResult> calibrate_stack(const std::vector<TimingSeries>& series,
                                                 const LinkCost& intra, const LinkCost& inter,
                                                 const StackSpec& base,
                                                 const StackCalibrationOptions& options);

}  // namespace dagsgd::model
