// Fuzz target: the manifest of a run directory. An Error, or a manifest whose numbers are in
// range, whose trace paths stay inside the run directory, and that survives a write and re-read.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "dagsgd/trace/manifest.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dagsgd;
  auto m = trace::manifest_from_json(dagsgd::fuzz::text_of(data, size), "manifest 'fuzz'");
  if (!m.ok()) {
    FUZZ_REQUIRE(m.error().message.rfind("manifest 'fuzz'", 0) == 0);
    return 0;
  }
  FUZZ_REQUIRE(m->ranks >= 1);
  FUZZ_REQUIRE(m->iterations.warmup >= 0);
  FUZZ_REQUIRE(m->iterations.times_s.empty() ||
               static_cast<std::size_t>(m->iterations.warmup) < m->iterations.times_s.size());
  for (const auto& t : m->traces) {
    const std::filesystem::path p(t);
    FUZZ_REQUIRE(!t.empty() && p.is_relative());
    for (const auto& part : p) FUZZ_REQUIRE(part != "..");
  }
  auto back = trace::manifest_from_json(trace::manifest_to_json(*m), "manifest 'again'");
  FUZZ_REQUIRE(back.ok());
  FUZZ_REQUIRE(back->ranks == m->ranks && back->traces == m->traces && back->run_id == m->run_id &&
               back->iterations.times_s == m->iterations.times_s &&
               back->iterations.warmup == m->iterations.warmup && back->config == m->config);
  return 0;
}
