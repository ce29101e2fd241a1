// Reading B-Caffe's per-tensor S-SGD logs (distributed.cpp glog lines): per parameter tensor its
// size, the backward time of its layer and its allreduce time, as measured on a real cluster.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"

namespace dagsgd::trace {

struct BcaffeTensor {
  int param_id = 0;
  std::int64_t elements = 0;
  double backward_us = 0;   // backward time of the layer that owns the tensor
  double allreduce_us = 0;  // 0 for a tensor sent together with another (biases with weights)
  std::optional<double> merged_allreduce_us;  // fifth column of merged-gradient runs
};

struct BcaffeLog {
  std::vector<BcaffeTensor> tensors;  // the chosen dump, in param_id order
  int dumps = 0;                      // dumps in the file (each starts at param_id 0)
  int zero_dumps = 0;                 // dumps whose times are all zero
  int skipped = 0;                    // dumps not returned (all but the chosen one)
  int chosen_dump = 0;                // 0-based index of the returned dump
  int first_line = 0;                 // 1-based line of its first tensor
  int ignored_lines = 0;              // glog lines that are not tensor records
};

// Returns the last dump with a non-zero time. Errors name the file and line.
model::Expected<BcaffeLog> parse_bcaffe_log(const std::string& text, const std::string& where);
model::Expected<BcaffeLog> read_bcaffe_log(const std::string& path);

}  // namespace dagsgd::trace
