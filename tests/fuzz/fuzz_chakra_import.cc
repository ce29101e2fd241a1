// Fuzz target: Chakra import. The bytes as one rank's execution trace (NAME.0.et), read as
// `dagsgd analyze` reads it and its task graph built. Whatever the bytes: an Error, or one event
// per node whose every dependency is an event of the file, and a task graph with an order.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "dagsgd/model/io.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/trace_dag.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dagsgd;
  // import_run reads files: one of this process's own, rewritten for each input.
  static const std::string path =
      "/tmp/dagsgd-fuzz-chakra-import-" + std::to_string(::getpid()) + ".0.et";
  if (!model::write_file(path, fuzz::text_of(data, size), true).ok()) return 0;
  auto run = trace::import_run({path}, trace::ImportOptions{});
  if (!run.ok()) return 0;
  FUZZ_REQUIRE(run->source == trace::RunSource::kChakra && run->ranks.size() == 1);
  const auto& rank = run->ranks[0];
  const auto& info = rank.chakra;
  FUZZ_REQUIRE(info.node_id.size() == rank.events.size());
  FUZZ_REQUIRE(info.deps_begin.size() == rank.events.size() + 1);
  for (auto d : info.deps) {
    FUZZ_REQUIRE(d >= 0 && static_cast<std::size_t>(d) < rank.events.size());
  }
  auto dag = trace::build_trace_dag(*run);
  if (!dag.ok()) return 0;
  FUZZ_REQUIRE(dag->dag.topological_order().ok());
  return 0;
}
