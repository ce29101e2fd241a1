// Fuzz target: Chakra export. The bytes as one rank's trace file, imported as `dagsgd export`
// imports a run, its task graph built, and each rank's execution trace projected and encoded.
// Whatever the bytes: an Error (a loop in the task graph included), or nodes numbered in order
// whose every dependency is an earlier node of the same file.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "dagsgd/model/io.h"
#include "dagsgd/reports/chakra_export.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dagsgd;
  // import_run reads files: one of this process's own, rewritten for each input.
  static const std::string path = "/tmp/dagsgd-fuzz-chakra-" + std::to_string(::getpid()) + ".json";
  if (!model::write_file(path, fuzz::text_of(data, size), true).ok()) return 0;
  auto run = trace::import_run({path}, trace::ImportOptions{});
  if (!run.ok()) return 0;
  auto dag = trace::build_trace_dag(*run);
  if (!dag.ok()) return 0;
  const auto ranks = reports::chakra_ranks(*run, *dag);
  FUZZ_REQUIRE(ranks.size() == run->ranks.size());
  for (const auto& r : ranks) {
    for (std::size_t i = 0; i < r.nodes.size(); ++i) {
      FUZZ_REQUIRE(r.nodes[i].id == i);
      for (auto d : r.nodes[i].data_deps) FUZZ_REQUIRE(d < i);
      for (auto d : r.nodes[i].ctrl_deps) FUZZ_REQUIRE(d < i);
    }
    FUZZ_REQUIRE(!reports::chakra_trace_file(*run, *dag, r).empty());
  }
  return 0;
}
