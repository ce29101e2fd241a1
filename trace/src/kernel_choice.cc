// Which of the JSON walk's kernels runs (kernel_choice.h): the kernels built in that this CPU
// runs, best first, by simdjson's own test of the instruction sets each needs.
#include "kernel_choice.h"

#include <simdjson.h>

#include <string>
#include <vector>

#include "dagsgd/trace/importer.h"
#include "importer_kernel.h"

namespace dagsgd::trace {

namespace detail {

std::span<const Kernel> runnable_kernels() {
  static const std::vector<Kernel> kernels = [] {
    std::vector<Kernel> wide;
#ifdef DAGSGD_KERNEL_ICELAKE
    wide.push_back(Kernel{icelake_kernel_name(), walk_icelake});
#endif
#ifdef DAGSGD_KERNEL_HASWELL
    wide.push_back(Kernel{haswell_kernel_name(), walk_haswell});
#endif
    std::vector<Kernel> out;
    // simdjson's own test of the instruction sets its kernel of that name needs.
    for (const auto& k : wide) {
      const simdjson::implementation* impl = simdjson::get_available_implementations()[k.name];
      if (impl != nullptr && impl->supported_by_runtime_system()) out.push_back(k);
    }
    out.push_back(Kernel{portable_kernel_name(), walk_portable});
    return out;
  }();
  return kernels;
}

Stage1As::Stage1As(const char* name) {
  auto& active = simdjson::get_active_implementation();
  was_ = active;
  const simdjson::implementation* want = simdjson::get_available_implementations()[name];
  if (want != nullptr && want != was_ && want->supported_by_runtime_system()) {
    active = want;
    swapped_ = true;
  }
}

Stage1As::~Stage1As() {
  if (swapped_) simdjson::get_active_implementation() = was_;
}

}  // namespace detail

std::vector<std::string> import_kernels() {
  std::vector<std::string> names;
  for (const auto& k : detail::runnable_kernels()) names.emplace_back(k.name);
  return names;
}

}  // namespace dagsgd::trace
