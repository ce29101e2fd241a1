// idx (LeCun's MNIST format) reading through zlib, with per-rank sharding.
#include "dagsgd/runtime/dataset.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "dagsgd/model/io.h"

namespace dagsgd::runtime {

std::vector<std::int64_t> shard_indices(std::int64_t total, int rank, int ranks,
                                        std::uint64_t seed) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(total));
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(seed ^ 0x5EEDDA7AULL);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<std::int64_t> mine;
  for (std::int64_t i = rank; i < total; i += ranks)
    mine.push_back(perm[static_cast<std::size_t>(i)]);
  return mine;
}

model::Expected<std::vector<std::uint8_t>> parse_idx(const std::string& bytes,
                                                     const std::string& where,
                                                     std::vector<std::int64_t>& dims) {
  auto u8 = [&bytes](std::size_t i) { return static_cast<std::uint8_t>(bytes[i]); };
  if (bytes.size() < 4) return model::Error{where + ": too short for an idx header"};
  if (u8(0) != 0 || u8(1) != 0 || u8(2) != 0x08) {
    return model::Error{where + ": not an idx file of unsigned bytes (magic " +
                        std::to_string(u8(0)) + "," + std::to_string(u8(1)) + "," +
                        std::to_string(u8(2)) + ")"};
  }
  std::size_t ndim = u8(3);
  if (ndim == 0 || ndim > 4)
    return model::Error{where + ": bad dimension count " + std::to_string(ndim)};
  std::size_t header = 4 + 4 * ndim;
  if (bytes.size() < header) return model::Error{where + ": truncated header"};
  dims.clear();
  std::int64_t elements = 1;
  for (std::size_t d = 0; d < ndim; ++d) {
    std::int64_t v = (std::int64_t{u8(4 + 4 * d)} << 24) | (std::int64_t{u8(5 + 4 * d)} << 16) |
                     (std::int64_t{u8(6 + 4 * d)} << 8) | std::int64_t{u8(7 + 4 * d)};
    dims.push_back(v);
    elements *= v;
  }
  if (static_cast<std::int64_t>(bytes.size() - header) != elements) {
    return model::Error{where + ": header promises " + std::to_string(elements) +
                        " bytes of data but the file has " + std::to_string(bytes.size() - header)};
  }
  return std::vector<std::uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(header),
                                   bytes.end());
}

model::Expected<Dataset> load_idx(const std::string& dir, const std::string& prefix, int rank,
                                  int ranks, std::uint64_t seed) {
  std::string img_path = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  std::string lbl_path = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  std::vector<std::int64_t> img_dims;
  std::vector<std::int64_t> lbl_dims;
  auto img_bytes = model::read_file(img_path);
  if (!img_bytes) return img_bytes.error();
  auto img = parse_idx(*img_bytes, "'" + img_path + "'", img_dims);
  if (!img) return img.error();
  img_bytes = std::string();  // release the decompressed copy early
  auto lbl_bytes = model::read_file(lbl_path);
  if (!lbl_bytes) return lbl_bytes.error();
  auto lbl = parse_idx(*lbl_bytes, "'" + lbl_path + "'", lbl_dims);
  if (!lbl) return lbl.error();
  if (img_dims.size() != 3) return model::Error{"'" + img_path + "': expected 3 dimensions"};
  if (lbl_dims.size() != 1) return model::Error{"'" + lbl_path + "': expected 1 dimension"};
  if (img_dims[0] != lbl_dims[0]) {
    return model::Error{"'" + img_path + "' has " + std::to_string(img_dims[0]) + " images but '" +
                        lbl_path + "' has " + std::to_string(lbl_dims[0]) + " labels"};
  }
  Dataset d;
  d.features = img_dims[1] * img_dims[2];
  std::int64_t total = img_dims[0];
  std::vector<std::int64_t> mine = shard_indices(total, rank, ranks, seed);
  const std::vector<std::int64_t>* pick = &mine;
  d.count = static_cast<std::int64_t>(pick->size());
  d.images.resize(static_cast<std::size_t>(d.count * d.features));
  d.labels.resize(static_cast<std::size_t>(d.count));
  for (std::int64_t s = 0; s < d.count; ++s) {
    std::int64_t src = (*pick)[static_cast<std::size_t>(s)];
    if (src < 0 || src >= total) {
      return model::Error{"'" + img_path + "': sample " + std::to_string(src) + " out of range"};
    }
    std::int32_t label = (*lbl)[static_cast<std::size_t>(src)];
    if (label >= d.classes) {
      return model::Error{"'" + lbl_path + "': label " + std::to_string(label) + " of sample " +
                          std::to_string(src) + " is not in 0..9"};
    }
    d.labels[static_cast<std::size_t>(s)] = label;
    const std::uint8_t* px = img->data() + src * d.features;
    float* out = d.images.data() + s * d.features;
    for (std::int64_t f = 0; f < d.features; ++f)
      out[f] = static_cast<float>(px[f]) * (1.0f / 255.0f);
  }
  return d;
}

}  // namespace dagsgd::runtime
