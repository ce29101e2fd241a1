// Text and JSON renderings of a fabric calibration.
#include "dagsgd/reports/calibrate_report.h"

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dagsgd/model/format.h"

namespace dagsgd::reports {

namespace {

constexpr double kBytesPerSecPerGbps = 1e9 / 8;

const char* statistic_text(bool max) {
  return max ? "Max Latency(us) column (the slowest rank)" : "average latency";
}

// The fit at each size, as a table; the stack's algorithm column when `algorithm`.
std::string points_text(const std::vector<model::PointFit>& points, bool algorithm) {
  char line[200];
  std::string out = "\n";
  std::snprintf(line, sizeof line, "%5s %12s ", "ranks", "bytes");
  out += line;
  if (algorithm) {
    std::snprintf(line, sizeof line, "%-20s ", "algorithm");
    out += line;
  }
  std::snprintf(line, sizeof line, "%14s %14s %9s\n", "measured_us", "fitted_us", "error");
  out += line;
  for (const auto& p : points) {
    std::snprintf(line, sizeof line, "%5d %12lld ", p.ranks, static_cast<long long>(p.bytes));
    out += line;
    if (algorithm) {
      std::snprintf(line, sizeof line, "%-20s ", p.algorithm.c_str());
      out += line;
    }
    std::snprintf(line, sizeof line, "%14.2f %14.2f %8.2f%%\n", p.measured_ns / 1e3,
                  p.fitted_ns / 1e3, p.relative_error * 100);
    out += line;
  }
  return out;
}

// The inputs a calibration's JSON starts with (LogCalibration, StackLogCalibration).
template <typename Calibration>
nlohmann::ordered_json inputs_json(const Calibration& c, const std::vector<std::string>& logs) {
  nlohmann::ordered_json j;
  j["logs"] = logs;
  j["benchmark"] = c.benchmark;
  j["ranks"] = c.ranks;
  return j;
}

// How far the fit is from the points (CalibrationResult, StackCalibrationResult).
template <typename Fit>
void residuals_json(const Fit& fit, nlohmann::ordered_json& j) {
  j["rms_relative_error"] = fit.rms_relative;
  j["max_relative_error"] = fit.max_relative_error;
  j["max_error_bytes"] = fit.max_error_bytes;
}

nlohmann::ordered_json points_json(const std::vector<model::PointFit>& points, bool algorithm) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& p : points) {
    nlohmann::ordered_json o{{"ranks", p.ranks}, {"bytes", p.bytes}};
    if (algorithm) o["algorithm"] = p.algorithm;
    o["measured_us"] = p.measured_ns / 1e3;
    o["fitted_us"] = p.fitted_ns / 1e3;
    o["relative_error"] = p.relative_error;
    out.push_back(std::move(o));
  }
  return out;
}

// The document, ending with the entry the calibration made (a fabric or a stack file) and where
// it went.
std::string finish_json(nlohmann::ordered_json& j, const char* key, const std::string& entry,
                        const std::string& written_to) {
  j[key] = nlohmann::ordered_json::parse(entry);
  if (!written_to.empty()) j["written_to"] = written_to;
  return j.dump(2) + "\n";
}

std::string wrote_text(const std::string& written_to) {
  return written_to.empty() ? "" : "wrote '" + written_to + "'\n";
}

}  // namespace

std::string calibration_text(const sim::LogCalibration& c, const std::string& algorithm,
                             bool no_step, const std::string& written_to) {
  using model::fmt;
  const auto& fit = c.fit;
  const std::string entry = model::fabric_to_json(c.fabric);
  std::string out =
      "calibrate: " + c.sizes + "; " + algorithm + " formula; " + statistic_text(c.max) + "\n";
  out += fmt("fit: alpha %.2f us per message", fit.link.alpha_ns / 1e3) +
         fmt(", beta %.4f ns/byte", fit.link.beta_ns_per_byte) +
         fmt(" (%.3f Gbit/s", fit.bandwidth() / kBytesPerSecPerGbps) +
         fmt(", %.3f GB/s)\n", fit.bandwidth() / 1e9);
  if (fit.has_step()) {
    out += fmt("     eager/rendezvous step: messages above %.0f bytes",
               static_cast<double>(fit.link.eager_limit)) +
           fmt(" pay %.2f us more\n", fit.link.rendezvous_ns / 1e3);
  } else {
    out +=
        std::string("     no eager/rendezvous step") + (no_step ? " (--no-step)" : " found") + "\n";
  }
  out += fmt("residuals: rms %.2f us", fit.rms_ns / 1e3) +
         fmt(", rms relative %.2f%%", fit.rms_relative * 100) +
         fmt(", max relative %.2f%%", fit.max_relative_error * 100) +
         fmt(" at %.0f bytes\n", static_cast<double>(fit.max_error_bytes));
  out += points_text(fit.points, /*algorithm=*/false);
  out += "\nfabric entry (load with --fabric-file):\n" + entry + "\n";
  return out + wrote_text(written_to);
}

std::string calibration_json(const sim::LogCalibration& c, const std::vector<std::string>& logs,
                             const std::string& algorithm, const std::string& written_to) {
  const auto& fit = c.fit;
  nlohmann::ordered_json j = inputs_json(c, logs);
  j["algorithm"] = algorithm;
  j["statistic"] = c.max ? "max" : "avg";
  j["alpha_us"] = fit.link.alpha_ns / 1e3;
  j["beta_ns_per_byte"] = fit.link.beta_ns_per_byte;
  j["bandwidth_gbps"] = fit.bandwidth() / kBytesPerSecPerGbps;
  j["eager_limit_bytes"] = fit.link.eager_limit;
  j["rendezvous_latency_us"] = fit.link.rendezvous_ns / 1e3;
  j["rms_us"] = fit.rms_ns / 1e3;
  residuals_json(fit, j);
  j["points"] = points_json(fit.points, /*algorithm=*/false);
  return finish_json(j, "fabric", model::fabric_to_json(c.fabric), written_to);
}

namespace {

// What the fit found, in the file's units.
std::string fitted_summary(const sim::StackLogCalibration& c) {
  using model::fmt;
  const auto& fit = c.fit;
  const auto& lib = fit.stack.library;
  std::string out =
      fmt("per-message software cost %.2f us beyond the link's", fit.per_message_ns / 1e3) +
      fmt(" %.2f us\n", model::to_micros(c.link.latency));
  const double gbps = fit.library_bandwidth / kBytesPerSecPerGbps;
  const double link = fit.link_bandwidth / kBytesPerSecPerGbps;
  if (lib.bandwidth_limit == "connection") {
    out += fit.capped ? fmt("per-connection limit %.3f Gbit/s",
                            lib.connection_bandwidth / kBytesPerSecPerGbps) +
                            " x " + std::to_string(lib.connections) + " connection(s)" +
                            fmt(" (the link spec allows %.3f Gbit/s)\n", link)
                      : fmt("no per-connection limit below the link's %.3f Gbit/s\n", link);
  } else {
    out += fmt("bandwidth efficiency %.3f", lib.efficiency) +
           fmt(" (%.3f Gbit/s", std::min(gbps, link)) + fmt(" of the link's %.3f)\n", link);
  }
  if (lib.eager_limit > 0) {
    out += fmt("eager/rendezvous step: messages above %.0f bytes",
               static_cast<double>(lib.eager_limit)) +
           fmt(" pay %.2f us more\n", lib.rendezvous_ns / 1e3);
  }
  return out;
}

}  // namespace

std::string stack_calibration_text(const sim::StackLogCalibration& c,
                                   const std::string& written_to) {
  using model::fmt;
  const auto& fit = c.fit;
  std::string out = "calibrate: " + c.sizes + "; stack '" + fit.stack.name + "' (" +
                    fit.stack.library.name + ") on the " + fit.link_class + "-node link '" +
                    c.link.name + "'; " + statistic_text(c.max) + "\n";
  out += fitted_summary(c);
  out += fmt("residuals: rms relative %.2f%%", fit.rms_relative * 100) +
         fmt(", max relative %.2f%%", fit.max_relative_error * 100) +
         fmt(" at %.0f bytes", static_cast<double>(fit.max_error_bytes)) + " (" +
         std::to_string(fit.iterations) + " fit(s) until the algorithm choices were stable)\n";
  out += points_text(fit.points, /*algorithm=*/true);
  out += "\nstack file (use with --stack FILE on predict, whatif and replay):\n" +
         model::stack_to_json(fit.stack) + "\n";
  return out + wrote_text(written_to);
}

std::string stack_calibration_json(const sim::StackLogCalibration& c,
                                   const std::vector<std::string>& logs,
                                   const std::string& written_to) {
  const auto& fit = c.fit;
  const auto& lib = fit.stack.library;
  nlohmann::ordered_json j = inputs_json(c, logs);
  j["statistic"] = c.max ? "max" : "avg";
  j["link"] = c.link.name;
  j["link_class"] = fit.link_class;
  j["link_gbps"] = fit.link_bandwidth / kBytesPerSecPerGbps;
  j["link_latency_us"] = model::to_micros(c.link.latency);
  j["per_message_us"] = fit.per_message_ns / 1e3;
  j["bandwidth_limit"] = lib.bandwidth_limit;
  j["connection_gbps"] = lib.connection_bandwidth / kBytesPerSecPerGbps;
  j["efficiency"] = lib.efficiency;
  j["eager_limit_bytes"] = lib.eager_limit;
  j["rendezvous_us"] = lib.rendezvous_ns / 1e3;
  residuals_json(fit, j);
  j["iterations"] = fit.iterations;
  j["points"] = points_json(fit.points, /*algorithm=*/true);
  return finish_json(j, "stack", model::stack_to_json(fit.stack), written_to);
}

std::string calibration_report(const sim::CalibrationRun& run, const sim::CalibrationRequest& r,
                               bool json, const std::string& written_to) {
  if (run.stack) {
    const auto inputs = r.trace.empty() ? r.logs : std::vector<std::string>{r.trace};
    return json ? stack_calibration_json(*run.stack, inputs, written_to)
                : stack_calibration_text(*run.stack, written_to);
  }
  return json ? calibration_json(*run.fabric, r.logs, r.algorithm, written_to)
              : calibration_text(*run.fabric, r.algorithm, r.no_step, written_to);
}

}  // namespace dagsgd::reports
