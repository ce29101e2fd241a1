// Tail repair for unclosed traces: line-oriented, since TraceWriter writes one event per line.
#include "dagsgd/trace/trace_repair.h"

#include <nlohmann/json.hpp>

namespace dagsgd::trace {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A line holds a complete event when it parses as one JSON object (its separator comma aside).
bool complete_event_line(std::string line) {
  while (!line.empty() && is_space(line.back())) line.pop_back();
  if (!line.empty() && line.back() == ',') line.pop_back();
  if (line.empty() || line.front() != '{' || line.back() != '}') return false;
  // Valid JSON that starts with '{' is an object; accept() checks it without building one.
  return nlohmann::json::accept(line);
}

}  // namespace

model::Expected<RepairedTrace> repair_truncated_trace(const std::string& text,
                                                      const std::string& where) {
  static const std::string kArrayStart = "\"traceEvents\":[";
  std::size_t header = text.find(kArrayStart);
  if (header == std::string::npos) {
    return model::Error{where + ": no 'traceEvents' array: the trace was cut inside its header"};
  }
  std::size_t body = header + kArrayStart.size();
  std::size_t end = text.size();
  while (end > body && is_space(text[end - 1])) --end;
  RepairedTrace out;
  if (end >= body + 2 && text.compare(end - 2, 2, "]}") == 0) {
    out.text = text;
    return out;
  }
  // Walk back over lines until one is a complete event; everything after it is the cut tail.
  std::size_t keep = body;
  std::size_t line_end = end;
  while (line_end > body) {
    std::size_t nl = text.rfind('\n', line_end - 1);
    std::size_t line_start = (nl == std::string::npos || nl < body) ? body : nl + 1;
    if (complete_event_line(text.substr(line_start, line_end - line_start))) {
      keep = line_end;
      break;
    }
    if (line_start == body) break;
    line_end = line_start - 1;
  }
  out.text = text.substr(0, keep);
  while (out.text.size() > body && is_space(out.text.back())) out.text.pop_back();
  if (out.text.size() > body && out.text.back() == ',') out.text.pop_back();
  out.text.append("\n]}\n");
  out.repaired = true;
  // The newline that separated the kept part from the partial event is not counted.
  out.dropped_bytes = keep < end ? static_cast<std::int64_t>(end - keep - 1) : 0;
  return out;
}

}  // namespace dagsgd::trace
