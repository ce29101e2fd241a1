// Phase names as they appear in traces and reports.
#include "dagsgd/trace/event.h"

namespace dagsgd::trace {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kIo:
      return "io";
    case Phase::kH2D:
      return "h2d";
    case Phase::kForward:
      return "forward";
    case Phase::kBackward:
      return "backward";
    case Phase::kComm:
      return "comm";
    case Phase::kUpdate:
      return "update";
    case Phase::kNone:
      break;
  }
  return "none";
}

Phase phase_from_name(const std::string& name) {
  for (Phase p :
       {Phase::kIo, Phase::kH2D, Phase::kForward, Phase::kBackward, Phase::kComm, Phase::kUpdate}) {
    if (name == phase_name(p)) return p;
  }
  return Phase::kNone;
}

}  // namespace dagsgd::trace
