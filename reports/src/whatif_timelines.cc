// What-if timelines: one simulated iteration of a scenario as a Chrome/Kineto trace that
// Perfetto opens.
#include "dagsgd/reports/whatif_report.h"
#include "dagsgd/trace/trace_writer.h"
#include "whatif_common.h"

namespace dagsgd::reports {

namespace detail {

std::string span_name(const sim::TimelineSpan& s) {
  std::string k = model::task_kind_name(s.kind);
  if (s.kind == model::TaskKind::kComm) return "allreduce group " + std::to_string(s.layer);
  if (s.layer >= 0) return k + " layer " + std::to_string(s.layer);
  return k;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Timelines

std::string timeline_file_name(const sim::SweepPoint& point, std::size_t index) {
  std::string f;
  for (char c : point.fabric) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '+' || c == '_';
    f += ok ? c : '_';
  }
  return std::to_string(index) + "-" + f + "-" + std::to_string(point.gpus) + "gpus.trace.json";
}

std::string timeline_trace(const WhatifReport& report, const WhatifRow& row) {
  const auto& r = row.result;
  std::string out = "{\"schemaVersion\":1,\"displayTimeUnit\":\"ms\",\"otherData\":{\"scenario\":";
  trace::append_json_string(out, sim::point_label(report.grid, row.scenario));
  out += ",\"title\":";
  trace::append_json_string(out, report.title);
  out += "},\"traceEvents\":[\n";
  // About 140 bytes a span: one allocation instead of a copy at every doubling.
  out.reserve(out.size() + 160 * (r.timeline.size() + static_cast<std::size_t>(r.workers) + 1));
  bool first = true;
  auto emit = [&](const trace::Event& e) {
    if (!first) out += ",\n";
    first = false;
    trace::append_event_json(out, e);
  };
  // Collectives span every worker; they get their own process after the workers.
  const std::int64_t comm_pid = r.workers;
  for (int w = 0; w <= r.workers; ++w) {
    trace::Event m;
    m.ph = 'M';
    m.name = "process_name";
    m.pid = w;
    m.args.push_back({"name", w < r.workers ? "GPU " + std::to_string(w) : "gradient exchange"});
    emit(m);
  }
  // One event for every span, so its strings and arguments keep their capacity (a 512-GPU
  // timeline has about 0.5 M spans).
  trace::Event e;
  e.ph = 'X';
  for (const auto& s : r.timeline) {
    e.name = detail::span_name(s);
    e.args.clear();
    const bool comm = s.kind == model::TaskKind::kComm;
    e.cat = comm ? trace::cat::kUserAnnotation : trace::cat::kKernel;
    e.ts = s.start;
    e.dur = s.duration;
    e.pid = s.worker < 0 ? comm_pid : s.worker;
    // Threads as the HTML lanes: compute, input, copies, host work, the rank's own collectives.
    switch (s.kind) {
      case model::TaskKind::kIo:
      case model::TaskKind::kH2D:
        e.tid = 1;
        break;
      case model::TaskKind::kMemcpy:
        e.tid = 2;
        break;
      case model::TaskKind::kOther:
        e.tid = 3;
        break;
      case model::TaskKind::kComm:
        e.tid = s.worker < 0 ? 0 : 4;
        break;
      default:
        e.tid = 0;
    }
    e.args.push_back({trace::arg::kPhase, std::string(model::task_kind_name(s.kind))});
    if (s.layer >= 0) e.args.push_back({trace::arg::kLayer, std::int64_t{s.layer}});
    if (comm) e.args.push_back({trace::arg::kAlgorithm, r.algorithm});
    emit(e);
  }
  out += "\n]}\n";
  return out;
}

}  // namespace dagsgd::reports
