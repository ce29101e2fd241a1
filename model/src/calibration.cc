// Calibration of the alpha-beta link model from allreduce latencies: the design matrix comes from
// the algorithm's plan (collective_plan.h), so a fitted link prices collectives consistently.
#include "dagsgd/model/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include <Eigen/Dense>

#include "collective_plan.h"

namespace dagsgd::model {
namespace {

// A measured point must have a positive size and a positive, finite time.
Expected<void> check_point(const TimingPoint& pt) {
  if (pt.bytes > 0 && pt.nanos > 0 && std::isfinite(pt.nanos)) return ok();
  std::ostringstream msg;
  msg << "point (" << pt.bytes << " bytes, " << pt.nanos << " ns): sizes and times must be > 0";
  return Error{msg.str()};
}

using detail::Plan;

// Step positions (eager limits) fitted one by one; beyond this many, a coarse pass first.
constexpr std::size_t kMaxStepCandidates = 1024;

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
      DAGSGD_TRY(check_point(pt));
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
    std::set<Bytes> limit_set;
    for (const auto& row : rows) limit_set.insert(static_cast<Bytes>(std::ceil(row.largest)));
    const std::vector<Bytes> limits(limit_set.begin(), limit_set.end());
    // The BIC of the fit with a step at limits[k]; the best is kept in `best`.
    auto try_limit = [&](std::size_t k) {
      const Bytes limit = limits[k];
      const auto above = [&](double bytes) { return bytes > static_cast<double>(limit); };
      if (limit <= 0 ||
          std::none_of(rows.begin(), rows.end(), [&](const Row& r) { return above(r.largest); })) {
        return std::numeric_limits<double>::infinity();
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
      // No step after all: the two-parameter fit covers it.
      if (c.coef(2) <= 0) return std::numeric_limits<double>::infinity();
      const double c_bic = bic(c.rss, rows.size(), 4);
      if (c_bic < best_bic) {
        best = c;
        best.eager_limit = limit;
        best_bic = c_bic;
      }
      return c_bic;
    };
    // Each candidate costs a fit over every row: beyond kMaxStepCandidates of them (the real
    // logs have a few hundred sizes), every stride-th first, then every one between the neighbours
    // of the best of those, so that the work stays near linear in the rows.
    if (limits.size() <= kMaxStepCandidates) {
      for (std::size_t k = 0; k < limits.size(); ++k) try_limit(k);
    } else {
      const std::size_t stride = (limits.size() + kMaxStepCandidates - 1) / kMaxStepCandidates;
      std::size_t coarse_best = 0;
      double coarse_bic = std::numeric_limits<double>::infinity();
      for (std::size_t k = 0; k < limits.size(); k += stride) {
        const double b = try_limit(k);
        if (b < coarse_bic) {
          coarse_bic = b;
          coarse_best = k;
        }
      }
      const std::size_t lo = coarse_best >= stride ? coarse_best - stride + 1 : 0;
      const std::size_t hi = std::min(limits.size(), coarse_best + stride);
      for (std::size_t k = lo; k < hi; ++k) {
        if (k != coarse_best) try_limit(k);
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

// ---------------------------------------------------------------------------------------------
// Transfer calibration (calibration.h)

namespace dagsgd::model {
namespace {

// The stack as the benchmark runs it: its library and the benchmark's call, no framework costs.
Expected<StackSpec> benchmark_view(const StackSpec& stack, const BenchmarkSetup& setup) {
  StackSpec v = stack;
  FrameworkSpec f;
  f.name = "micro-benchmark";
  f.call = setup.call;
  v.framework = f;
  if (auto ok = validate_stack(v); !ok) {
    return Error{"stack '" + stack.name + "' cannot run the benchmark's call '" + setup.call +
                 "': " + ok.error().message};
  }
  return v;
}

Expected<detail::Shape> benchmark_shape(const BenchmarkSetup& setup, int ranks) {
  if (ranks < 2) return Error{"a benchmark needs at least 2 ranks, got " + std::to_string(ranks)};
  if (setup.ranks_per_node < 1 || ranks % setup.ranks_per_node != 0) {
    return Error{std::to_string(setup.ranks_per_node) + " ranks per node do not divide " +
                 std::to_string(ranks) + " ranks"};
  }
  return detail::Shape{ranks / setup.ranks_per_node, setup.ranks_per_node, 0};
}

std::string choice_name(const detail::StackChoice& c) {
  return c.protocol.empty() ? c.algorithm : c.algorithm + "/" + c.protocol;
}

// Per phase of a benchmark call's plan, the wire bytes that wait for the rate when the ports
// between its nodes have a shaper's burst (one rank per node, each call starting rested: the
// benchmark's calls leave the link idle between their messages); empty when there is none.
Expected<std::vector<double>> burst_waits(const std::string& algorithm, const detail::Shape& shape,
                                          const detail::Plan& plan, const LinkCost& inter) {
  if (inter.burst_bytes <= 0 || shape.gpus_per_node != 1 || shape.nodes < 2) {
    return std::vector<double>{};
  }
  return detail::burst_wire_bytes(algorithm, plan, shape.nodes,
                                  static_cast<double>(inter.burst_bytes));
}

}  // namespace

Expected<BenchmarkTime> stack_benchmark_time(const StackSpec& stack, const LinkCost& intra,
                                             const LinkCost& inter, const BenchmarkSetup& setup,
                                             int ranks, double bytes) {
  auto view = benchmark_view(stack, setup);
  DAGSGD_TRY(view);
  auto shape = benchmark_shape(setup, ranks);
  DAGSGD_TRY(shape);
  const Topology topo{shape->nodes, shape->gpus_per_node, intra, inter};
  const detail::StackChoice c =
      detail::stack_choice(*view, topo, *shape, "auto", bytes, /*with_framework=*/false);
  double nanos = detail::stack_cost(c, *shape, false);
  if (inter.burst_bytes > 0) {  // what the burst lets through costs no wire time
    auto plan = detail::allreduce_plan(c.algorithm, *shape, c.bytes);
    DAGSGD_TRY(plan);
    auto waits = burst_waits(c.algorithm, *shape, *plan, inter);
    DAGSGD_TRY(waits);
    for (std::size_t k = 0; k < waits->size(); ++k) {
      nanos -= ((*plan)[k].wire_bytes - (*waits)[k]) * c.inter.beta_ns_per_byte;
    }
  }
  return BenchmarkTime{nanos, choice_name(c)};
}

Expected<StackCalibrationResult> calibrate_stack(const std::vector<TimingSeries>& series,
                                                 const LinkCost& intra, const LinkCost& inter,
                                                 const StackSpec& base,
                                                 const StackCalibrationOptions& options) {
  DAGSGD_TRY(validate_stack(base));
  auto view = benchmark_view(base, options.setup);
  DAGSGD_TRY(view);
  StackSpec current = std::move(*view);
  struct Row {
    TimingPoint point;
    int ranks = 0;
    detail::Shape shape;
  };
  std::vector<Row> rows;
  std::set<std::pair<int, Bytes>> sizes;
  std::optional<bool> crosses_nodes;
  for (const auto& s : series) {
    auto shape = benchmark_shape(options.setup, s.ranks);
    DAGSGD_TRY(shape);
    const bool across = shape->nodes > 1;
    if (crosses_nodes && *crosses_nodes != across) {
      return Error{"the logs must all cross nodes or all stay on one node (one link to fit)"};
    }
    crosses_nodes = across;
    for (const auto& pt : s.points) {
      DAGSGD_TRY(check_point(pt));
      rows.push_back({pt, s.ranks, *shape});
      sizes.emplace(s.ranks, pt.bytes);
    }
  }
  if (sizes.size() < 3) {
    return Error{"calibration needs at least 3 distinct message sizes, got " +
                 std::to_string(sizes.size())};
  }
  const bool inter_class = crosses_nodes.value_or(false);
  const LinkCost& bare = inter_class ? inter : intra;
  if (!(bare.beta_ns_per_byte > 0)) {
    return Error{std::string("the ") + (inter_class ? "inter" : "intra") +
                 "-node link spec has no bandwidth to calibrate against"};
  }
  LibrarySpec& lib = current.library;
  const bool connection = lib.bandwidth_limit == "connection";
  const auto n = static_cast<Eigen::Index>(rows.size());

  StackCalibrationResult r;
  r.link_class = inter_class ? "inter" : "intra";
  r.link_bandwidth = 1e9 / bare.beta_ns_per_byte;
  std::vector<std::string> previous;
  constexpr int kMaxIterations = 10;
  for (int it = 0; it < kMaxIterations; ++it) {
    r.iterations = it + 1;
    // Each point's choice under the current values, and its design row.
    std::vector<std::string> choices;
    std::vector<Plan> plans;
    Eigen::MatrixXd base_cols(n, 2);
    Eigen::VectorXd y(n);
    std::vector<double> largest(rows.size(), 0);
    std::vector<double> known_rdv_ns(rows.size(), 0);
    for (Eigen::Index i = 0; i < n; ++i) {
      const Row& row = rows[static_cast<std::size_t>(i)];
      const Topology topo{row.shape.nodes, row.shape.gpus_per_node, intra, inter};
      const double bytes = static_cast<double>(row.point.bytes);
      const detail::StackChoice c =
          detail::stack_choice(current, topo, row.shape, "auto", bytes, false);
      choices.push_back(choice_name(c));
      auto plan = detail::allreduce_plan(c.algorithm, row.shape, bytes);
      DAGSGD_TRY(plan);
      auto waits = burst_waits(c.algorithm, row.shape, *plan, inter);
      DAGSGD_TRY(waits);
      double known = c.fixed_ns;
      double messages = 0;
      double wire = 0;
      for (std::size_t k = 0; k < plan->size(); ++k) {
        const detail::Phase& ph = (*plan)[k];
        const bool intra_phase = ph.link == detail::LinkClass::kIntra;
        const LinkCost& l = intra_phase ? intra : inter;
        known += ph.messages * (l.alpha_ns + (intra_phase ? c.protocol_message_intra_ns
                                                          : c.protocol_message_inter_ns));
        known += ph.reduce_bytes * l.gamma_ns_per_byte;
        if (ph.link != (inter_class ? detail::LinkClass::kInter : detail::LinkClass::kIntra)) {
          return Error{"algorithm '" + c.algorithm +
                       "' uses both link classes; calibrate on "
                       "one node or with one rank per node"};
        }
        messages += ph.messages;
        wire += (waits->empty() ? ph.wire_bytes : (*waits)[k]) / c.protocol_efficiency;
        if (ph.messages > 0)
          largest[static_cast<std::size_t>(i)] =
              std::max(largest[static_cast<std::size_t>(i)], ph.message_bytes);
        const LinkCost& stacked = intra_phase ? c.intra : c.inter;
        if (stacked.eager_limit > 0 &&
            ph.message_bytes > static_cast<double>(stacked.eager_limit)) {
          known_rdv_ns[static_cast<std::size_t>(i)] += ph.messages * stacked.rendezvous_ns;
        }
      }
      const double t = row.point.nanos;
      if (!options.fit_step) known += known_rdv_ns[static_cast<std::size_t>(i)];
      base_cols(i, 0) = messages / t;
      base_cols(i, 1) = wire / t;
      y(i) = (t - known) / t;
      plans.push_back(std::move(*plan));
    }
    Candidate best = nnls(base_cols, y);
    double best_bic = bic(best.rss, rows.size(), 2);
    if (options.fit_step) {
      std::set<Bytes> limits;
      for (double l : largest) limits.insert(static_cast<Bytes>(std::ceil(l)));
      for (Bytes limit : limits) {
        const auto above = [&](double b) { return b > static_cast<double>(limit); };
        if (limit <= 0 || std::none_of(largest.begin(), largest.end(), above)) continue;
        Eigen::MatrixXd a(n, 3);
        a.leftCols(2) = base_cols;
        for (Eigen::Index i = 0; i < n; ++i) {
          double rdv = 0;
          for (const auto& ph : plans[static_cast<std::size_t>(i)]) {
            if (above(ph.message_bytes)) rdv += ph.messages;
          }
          a(i, 2) = rdv / rows[static_cast<std::size_t>(i)].point.nanos;
        }
        Candidate c = nnls(a, y);
        if (c.coef(2) <= 0) continue;
        const double c_bic = bic(c.rss, rows.size(), 4);
        if (c_bic < best_bic) {
          best = c;
          best.eager_limit = limit;
          best_bic = c_bic;
        }
      }
    }
    // The fitted values into the stack.
    lib.per_message_ns = best.coef(0);
    const double beta = best.coef(1);
    r.library_bandwidth = beta > 0 ? 1e9 / beta : std::numeric_limits<double>::infinity();
    if (connection) {
      r.capped = beta > bare.beta_ns_per_byte * (1 + 1e-9);
      lib.connection_bandwidth = r.capped ? 1e9 / beta / lib.connections : 0;
    } else {
      lib.efficiency = beta > bare.beta_ns_per_byte ? bare.beta_ns_per_byte / beta : 1.0;
    }
    if (options.fit_step) {
      lib.eager_limit = best.eager_limit;
      lib.rendezvous_ns = best.eager_limit > 0 ? best.coef(2) : 0;
    }
    if (choices == previous) break;
    previous = std::move(choices);
  }

  // Residuals under the fitted stack, priced as predictions price it.
  double sq_rel = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    auto t = stack_benchmark_time(current, intra, inter, options.setup, row.ranks,
                                  static_cast<double>(row.point.bytes));
    DAGSGD_TRY(t);
    const double rel = (t->nanos - row.point.nanos) / row.point.nanos;
    r.points.push_back({row.point.bytes, row.point.nanos, t->nanos, rel, row.ranks, t->algorithm});
    sq_rel += rel * rel;
    if (std::abs(rel) > r.max_relative_error) {
      r.max_relative_error = std::abs(rel);
      r.max_error_bytes = row.point.bytes;
    }
  }
  r.rms_relative = std::sqrt(sq_rel / static_cast<double>(rows.size()));
  r.per_message_ns = lib.per_message_ns;
  // The result keeps the base's framework, not the benchmark's view of it.
  current.framework = base.framework;
  const std::string how = "transfer calibration";
  current.set_source("library.per_message_us", how);
  current.set_source(connection ? "library.connection_gbps" : "library.efficiency", how);
  if (options.fit_step) {
    current.set_source("library.eager_limit_bytes", how);
    current.set_source("library.rendezvous_us", how);
  }
  r.stack = std::move(current);
  return r;
}

}  // namespace dagsgd::model
