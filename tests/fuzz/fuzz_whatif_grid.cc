// Fuzz target: whatif grids. The input's lines are the list options, comma-separated: fabrics,
// GPU counts, algorithms, overlaps, precisions, top-k fractions, then GPUs per node and the
// point limit. The grid is expanded and each point resolved for AlexNet (what `dagsgd whatif`
// does before it simulates). Whatever the bytes: an Error, or exactly the product of the lists
// as points, no more than the limit, each a whole number of nodes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "dagsgd/sim/sweep.h"
#include "fuzz_check.h"

namespace {

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream s(line);
  std::string f;
  while (std::getline(s, f, ',')) out.push_back(f);
  return out;
}

// A whole number of the text, or `otherwise` (the CLI refuses what is not one).
long whole(const std::string& f, long otherwise) {
  char* end = nullptr;
  const long v = std::strtol(f.c_str(), &end, 10);
  return f.empty() || *end != '\0' ? otherwise : v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dagsgd::sim;
  static const auto catalogs = Catalogs::load();
  FUZZ_REQUIRE(catalogs.ok());
  static const auto workload = [] {
    NetworkSpec spec;
    spec.network = "alexnet";
    spec.batch = 32;
    return NetworkWorkload::resolve(spec, *catalogs);
  }();
  FUZZ_REQUIRE(workload.ok());

  std::vector<std::string> lines;
  std::stringstream in(dagsgd::fuzz::text_of(data, size));
  for (std::string l; std::getline(in, l) && lines.size() < 8;) lines.push_back(l);
  lines.resize(8);
  SweepGrid g;
  g.fabrics = fields(lines[0]);
  for (const auto& f : fields(lines[1])) {
    const long v = whole(f, 0);
    if (v < 1 || v > (1L << 20)) return 0;  // --gpus takes 1 to 2^20
    g.gpus.push_back(static_cast<int>(v));
  }
  if (!lines[2].empty()) g.algorithms = fields(lines[2]);
  if (!lines[3].empty()) g.overlaps = fields(lines[3]);
  if (!lines[4].empty()) g.precisions = fields(lines[4]);
  if (!lines[5].empty()) {
    g.topks.clear();
    for (const auto& f : fields(lines[5])) g.topks.push_back(std::strtod(f.c_str(), nullptr));
  }
  g.gpus_per_node = static_cast<int>(std::min(whole(lines[6], 1), 1L << 20));
  g.max_points = static_cast<std::size_t>(std::clamp(whole(lines[7], 64), 0L, 4096L));

  auto sweep = prepare_sweep(g, **workload, *catalogs);
  if (!sweep.ok()) return 0;
  const std::size_t product = g.fabrics.size() * g.gpus.size() * g.algorithms.size() *
                              g.overlaps.size() * g.precisions.size() * g.topks.size();
  FUZZ_REQUIRE(sweep->points.size() == product);
  FUZZ_REQUIRE(sweep->points.size() <= g.max_points);
  FUZZ_REQUIRE(sweep->scenarios.size() == sweep->points.size());
  for (const auto& p : sweep->points) {
    FUZZ_REQUIRE(p.nodes >= 1 && p.gpus_per_node >= 1 &&
                 std::int64_t{p.nodes} * p.gpus_per_node == p.gpus);
  }
  return 0;
}
