// Fashion-MNIST in idx format (gzip), read so that each rank keeps only its own shard.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"

namespace dagsgd::runtime {

// Samples as float pixels in [0, 1], row-major [count x features].
struct Dataset {
  std::int64_t count = 0;
  std::int64_t features = 0;  // 784 for 28x28 images
  int classes = 10;
  std::vector<float> images;
  std::vector<std::int32_t> labels;
};

// Which samples of a file of `total` samples this rank keeps: a fixed, seeded permutation of all
// sample indices is dealt round-robin, so shard r holds perm[r], perm[r+P], perm[r+2P], ...
// Stacking the j-th mini-batch of every shard gives the same global mini-batch for any P that
// divides the global batch: runs with P ranks see exactly the data of a 1-rank run.
std::vector<std::int64_t> shard_indices(std::int64_t total, int rank, int ranks,
                                        std::uint64_t seed);

// Reads `<prefix>-images-idx3-ubyte.gz` and `<prefix>-labels-idx1-ubyte.gz` in `dir` and keeps
// shard_indices(total, rank, ranks, seed) in that order. Errors name the file.
model::Expected<Dataset> load_idx(const std::string& dir, const std::string& prefix, int rank,
                                  int ranks, std::uint64_t seed);

// Parses one idx file already in memory (for the tests); `where` names it in errors.
model::Expected<std::vector<std::uint8_t>> parse_idx(const std::string& bytes,
                                                     const std::string& where,
                                                     std::vector<std::int64_t>& dims);

// Where the Debian package dataset-fashion-mnist installs the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

}  // namespace dagsgd::runtime
