// Phase names as they appear in traces and reports; the PyTorch-style args of communication.
#include "dagsgd/trace/event.h"

#include <iterator>

namespace dagsgd::trace {

const char* phase_name(Phase p) {
  // In the order of the enum.
  static constexpr const char* kNames[] = {"none",     "io",   "h2d",   "forward",
                                           "backward", "comm", "update"};
  const auto i = static_cast<std::size_t>(p);
  return i < std::size(kNames) ? kNames[i] : "none";
}

void add_comm_args(Event& e, const std::string& collective, std::int64_t group_size) {
  e.add(arg::kCollectiveName, collective);
  if (group_size > 0) e.add(arg::kGroupSize, group_size);
}

Phase phase_from_name(const std::string& name) {
  for (Phase p :
       {Phase::kIo, Phase::kH2D, Phase::kForward, Phase::kBackward, Phase::kComm, Phase::kUpdate}) {
    if (name == phase_name(p)) return p;
  }
  return Phase::kNone;
}

}  // namespace dagsgd::trace
