// Fuzz target: OSU / nccl-tests latency logs, then the alpha-beta calibration of their points
// (what `dagsgd calibrate` does). Whatever the bytes: an Error, or points in range, one per size.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "dagsgd/model/calibration.h"
#include "dagsgd/trace/osu_log.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dagsgd;
  auto log = trace::parse_latency_log(dagsgd::fuzz::text_of(data, size), "fuzz.log");
  if (!log.ok()) return 0;
  FUZZ_REQUIRE(!log->points.empty());
  std::set<model::Bytes> sizes;
  std::vector<model::TimingPoint> points;
  for (const auto& p : log->points) {
    FUZZ_REQUIRE(p.bytes >= 0 && p.latency_us >= 0 && p.latency_us < 1e12);
    FUZZ_REQUIRE(sizes.insert(p.bytes).second);
    if (p.bytes > 0 && p.latency_us > 0) points.push_back({p.bytes, p.latency_us * 1e3});
  }
  // The fit tries every split between sizes (quadratic): real logs have 20-30 sizes.
  if (points.size() > 40) return 0;
  model::CalibrationOptions options;
  options.ranks = log->ranks && *log->ranks >= 2 ? *log->ranks : 2;
  auto fit = model::calibrate_allreduce(points, options);
  if (fit.ok()) FUZZ_REQUIRE(fit->link.alpha_ns >= 0 && fit->link.beta_ns_per_byte >= 0);
  return 0;
}
