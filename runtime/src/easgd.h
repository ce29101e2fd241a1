// Synchronous elastic averaging (--sync easgd:TAU,ALPHA): every TAU iterations each rank's
// parameters and the replicated center move toward each other (exchange.h, elastic_average).
#pragma once

#include <cstdint>
#include <vector>

#include "dagsgd/runtime/train_config.h"
#include "exchange_driver.h"

namespace dagsgd::runtime {

class ElasticAveraging {
 public:
  // The center starts at the initial parameters, which every rank shares (same seed).
  ElasticAveraging(const TrainConfig& cfg, const std::vector<float>& params)
      : tau_(cfg.easgd_tau), alpha_(cfg.easgd_alpha), center_(params) {}

  // Whether the step after iteration `iteration` (0-based) averages.
  bool due(std::int64_t iteration) const { return (iteration + 1) % tau_ == 0; }
  // One averaging over the driver's single group; its span starts at `started_at`.
  void average(ExchangeDriver& driver, std::vector<float>& params, std::int64_t started_at) {
    driver.note_issue(0, started_at);
    elastic_average(driver.exchange(), params.data(), center_.data(),
                    static_cast<std::int64_t>(params.size()), alpha_, scratch_);
  }
  // What is evaluated: the center, the consensus of the ranks.
  const float* center() const { return center_.data(); }

 private:
  int tau_ = 1;
  double alpha_ = 0.5;
  std::vector<float> center_;
  std::vector<float> scratch_;
};

}  // namespace dagsgd::runtime
