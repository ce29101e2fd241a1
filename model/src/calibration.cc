// Calibration of the alpha-beta link model from allreduce latencies: the design matrix comes from
// the algorithm's plan (allreduce_plan.h), so a fitted link prices collectives consistently.
#include "dagsgd/model/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include <Eigen/Dense>

#include "allreduce_plan.h"

namespace dagsgd::model {
namespace {

using detail::Plan;

// Below this relative residual per point a fit is as good as the log's printed precision; the
// floor keeps the information criterion from rewarding fits of rounding noise.
constexpr double kRelativeNoiseFloor = 1e-6;

struct Candidate {
  Eigen::VectorXd coef;  // alpha, beta[, rendezvous] in ns and ns/byte
  double rss = std::numeric_limits<double>::infinity();
  Bytes eager_limit = 0;
};

// Non-negative least squares by trying every active set: exact, and cheap for 2-3 columns.
Candidate nnls(const Eigen::MatrixXd& a, const Eigen::VectorXd& y) {
  const auto cols = static_cast<int>(a.cols());
  Candidate best;
  best.coef = Eigen::VectorXd::Zero(cols);
  best.rss = y.squaredNorm();
  for (int mask = 1; mask < (1 << cols); ++mask) {
    std::vector<int> used;
    for (int c = 0; c < cols; ++c) {
      if (mask & (1 << c)) used.push_back(c);
    }
    Eigen::MatrixXd sub(a.rows(), static_cast<Eigen::Index>(used.size()));
    Eigen::VectorXd scale(static_cast<Eigen::Index>(used.size()));
    for (std::size_t k = 0; k < used.size(); ++k) {
      const auto col = static_cast<Eigen::Index>(k);
      scale(col) = a.col(used[k]).norm();
      if (scale(col) == 0) scale(col) = 1;
      // Columns span ~1 (messages) to ~1e6 (bytes); equilibrate before solving.
      sub.col(col) = a.col(used[k]) / scale(col);
    }
    Eigen::VectorXd x = sub.colPivHouseholderQr().solve(y);
    if ((x.array() < 0).any()) continue;
    Eigen::VectorXd full = Eigen::VectorXd::Zero(cols);
    for (std::size_t k = 0; k < used.size(); ++k) {
      const auto col = static_cast<Eigen::Index>(k);
      full(used[k]) = x(col) / scale(col);
    }
    const double rss = (a * full - y).squaredNorm();
    if (rss < best.rss) {
      best.coef = full;
      best.rss = rss;
    }
  }
  return best;
}

double bic(double rss, std::size_t n, int parameters) {
  const double dn = static_cast<double>(n);
  const double floor = dn * kRelativeNoiseFloor * kRelativeNoiseFloor;
  return dn * std::log(std::max(rss, floor) / dn) + parameters * std::log(dn);
}

double largest_message(const Plan& plan) {
  double m = 0;
  for (const auto& ph : plan) {
    if (ph.messages > 0) m = std::max(m, ph.message_bytes);
  }
  return m;
}

}  // namespace

double CalibrationResult::bandwidth() const {
  return link.beta_ns_per_byte > 0 ? 1e9 / link.beta_ns_per_byte : 0;
}

std::vector<std::string> calibration_algorithm_names() { return detail::single_link_algorithms(); }

Expected<CalibrationResult> calibrate_allreduce(const std::vector<TimingPoint>& points,
                                                const CalibrationOptions& options) {
  return calibrate_allreduce(std::vector<TimingSeries>{{options.ranks, points}}, options);
}

Expected<CalibrationResult> calibrate_allreduce(const std::vector<TimingSeries>& series,
                                                const CalibrationOptions& options) {
  const NameRegistry calibratable("single-link algorithm", calibration_algorithm_names());
  if (!calibratable.contains(options.algorithm)) {
    return Error{"cannot calibrate algorithm '" + options.algorithm +
                 "' from one log; valid algorithms: " + calibratable.list()};
  }
  // Flattened rows, each with its plan (a one-level shape: every rank on its own node, so the
  // plan prices the one link we fit) and the largest message it sends.
  struct Row {
    TimingPoint point;
    int ranks = 0;
    Plan plan;
    double largest = 0;
  };
  std::vector<Row> rows;
  std::set<std::pair<int, Bytes>> sizes;
  for (const auto& s : series) {
    if (s.ranks < 2) {
      return Error{"calibration needs at least 2 ranks, got " + std::to_string(s.ranks)};
    }
    for (const auto& pt : s.points) {
      if (pt.bytes <= 0 || !(pt.nanos > 0) || !std::isfinite(pt.nanos)) {
        std::ostringstream msg;
        msg << "point (" << pt.bytes << " bytes, " << pt.nanos
            << " ns): sizes and times must be > 0";
        return Error{msg.str()};
      }
      auto plan = detail::allreduce_plan(options.algorithm, detail::Shape{s.ranks, 1, 0},
                                         static_cast<double>(pt.bytes));
      DAGSGD_TRY(plan);
      const double largest = largest_message(*plan);
      rows.push_back({pt, s.ranks, std::move(*plan), largest});
      sizes.emplace(s.ranks, pt.bytes);
    }
  }
  if (sizes.size() < 3) {
    return Error{"calibration needs at least 3 distinct message sizes, got " +
                 std::to_string(sizes.size())};
  }

  const auto n = static_cast<Eigen::Index>(rows.size());
  Eigen::MatrixXd base(n, 2);
  Eigen::VectorXd y = Eigen::VectorXd::Ones(n);  // relative: every row divided by its time
  for (Eigen::Index i = 0; i < n; ++i) {
    const Row& row = rows[static_cast<std::size_t>(i)];
    double messages = 0;
    double wire = 0;
    for (const auto& ph : row.plan) {
      messages += ph.messages;
      wire += ph.wire_bytes;
    }
    base(i, 0) = messages / row.point.nanos;
    base(i, 1) = wire / row.point.nanos;
  }

  Candidate best = nnls(base, y);
  double best_bic = bic(best.rss, rows.size(), 2);
  if (options.fit_step) {
    // Candidate limits: the largest message of each size. With one rank count, trying each
    // in turn is trying each split between consecutive sizes: the limit puts every message of
    // that size and the smaller ones under it, and the next size above it.
    std::set<Bytes> limits;
    for (const auto& row : rows) limits.insert(static_cast<Bytes>(std::ceil(row.largest)));
    for (Bytes limit : limits) {
      const auto above = [&](double bytes) { return bytes > static_cast<double>(limit); };
      if (limit <= 0 ||
          std::none_of(rows.begin(), rows.end(), [&](const Row& r) { return above(r.largest); })) {
        continue;
      }
      Eigen::MatrixXd a(n, 3);
      a.leftCols(2) = base;
      for (Eigen::Index i = 0; i < n; ++i) {
        const Row& row = rows[static_cast<std::size_t>(i)];
        double rendezvous = 0;
        for (const auto& ph : row.plan) {
          if (above(ph.message_bytes)) rendezvous += ph.messages;
        }
        a(i, 2) = rendezvous / row.point.nanos;
      }
      Candidate c = nnls(a, y);
      if (c.coef(2) <= 0) continue;  // no step after all: the two-parameter fit covers it
      const double c_bic = bic(c.rss, rows.size(), 4);
      if (c_bic < best_bic) {
        best = c;
        best.eager_limit = limit;
        best_bic = c_bic;
      }
    }
  }

  CalibrationResult r;
  r.algorithm = options.algorithm;
  r.ranks = series.front().ranks;
  for (const auto& s : series) {
    if (s.ranks != r.ranks) r.ranks = 0;
  }
  r.link.alpha_ns = best.coef(0);
  r.link.beta_ns_per_byte = best.coef(1);
  if (best.eager_limit > 0) {
    r.link.eager_limit = best.eager_limit;
    r.link.rendezvous_ns = best.coef(2);
  }
  double sq = 0;
  double sq_rel = 0;
  for (const auto& row : rows) {
    double fitted = 0;
    for (const auto& ph : row.plan) fitted += detail::phase_cost(ph, r.link);
    const double err = fitted - row.point.nanos;
    const double rel = err / row.point.nanos;
    r.points.push_back({row.point.bytes, row.point.nanos, fitted, rel, row.ranks});
    sq += err * err;
    sq_rel += rel * rel;
    if (std::abs(rel) > r.max_relative_error) {
      r.max_relative_error = std::abs(rel);
      r.max_error_bytes = row.point.bytes;
    }
  }
  r.rms_ns = std::sqrt(sq / static_cast<double>(rows.size()));
  r.rms_relative = std::sqrt(sq_rel / static_cast<double>(rows.size()));
  return r;
}

Expected<FabricSpec> fabric_from_calibration(const CalibrationResult& fit, const std::string& name,
                                             const std::string& scope,
                                             const std::string& description,
                                             const std::string& source, double nominal) {
  if (fit.bandwidth() <= 0) {
    return Error{
        "the fit has no bandwidth term (beta = 0); the log's sizes are too small to "
        "calibrate a link"};
  }
  FabricSpec f;
  f.name = name;
  f.description = description;
  f.scope = scope;
  f.achievable_bandwidth = fit.bandwidth();
  f.nominal_bandwidth = std::max(nominal, f.achievable_bandwidth);
  f.latency = std::llround(fit.link.alpha_ns);
  f.eager_limit = fit.link.eager_limit;
  f.rendezvous_latency = std::llround(fit.link.rendezvous_ns);
  f.source = source;
  return f;
}

}  // namespace dagsgd::model
