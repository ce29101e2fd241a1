// One trace text imported (import_trace_text in importer.h): the kernel asked for, a read of the
// text (file_parser.h), on two threads when it is large, and for a text cut short a repair of its
// tail and a second read; a text that is not JSON is named with the line and column.
#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cores.h"
#include "dagsgd/model/io.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/trace_repair.h"
#include "file_parser.h"
#include "importer_kernel.h"

namespace dagsgd::trace {

namespace {

using detail::Kernel;
using detail::kNotJson;

// Why `text` is not valid JSON, with the line and column: the first invalid UTF-8 byte (a fast
// scan), else nlohmann's first syntax error (a slower pass, on this error path only).
model::Error invalid_json(std::string_view text, const std::string& where,
                          const std::string& what) {
  const std::size_t bad = model::find_invalid_utf8(text);
  if (bad != std::string::npos) {
    return model::Error{where + ": " + what + ": " + model::text_position(text, bad) +
                        ": invalid UTF-8 byte"};
  }
  std::string syntax = model::json_syntax_error(text);
  if (syntax.empty()) syntax = "nested deeper than the trace reader's 1024 levels";
  return model::Error{where + ": " + what + ": " + syntax};
}

// Where JSON resumes after the text's first complete value (outside strings, brackets back to
// depth 0), or npos when the value runs to the end (a cut text) or only whitespace follows.
std::size_t trailing_json_at(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      const std::size_t next = text.find_first_not_of(" \t\r\n", i + 1);
      return next;  // npos when only whitespace follows
    }
  }
  return std::string_view::npos;
}

// A cut that is not our writer's one-event-per-line layout: close the array after the last
// event that still parses.
std::optional<std::string> generic_repair(const std::string& text) {
  std::size_t pos = text.size();
  // Each try parses the whole candidate: a few suffice for a cut tail (the last complete
  // event is found within them), and more would make a broken large file a slow one.
  for (int tries = 0; tries < 16; ++tries) {
    pos = text.rfind('}', pos == 0 ? 0 : pos - 1);
    if (pos == std::string::npos || pos == 0) return std::nullopt;
    std::size_t next = text.find_first_not_of(" \n\r\t", pos + 1);
    if (next == std::string::npos || text[next] != ',') continue;
    std::string candidate = text.substr(0, pos + 1) + "]}";
    candidate.reserve(candidate.size() + simdjson::SIMDJSON_PADDING);
    simdjson::dom::parser p;
    simdjson::dom::element el;
    if (p.parse(candidate.data(), candidate.size(), false).get(el) == simdjson::SUCCESS) {
      return candidate;
    }
  }
  return std::nullopt;
}

// Texts this long or longer are read on two threads when the CPU has two cores (ImportOptions).
constexpr std::size_t kSplitBytes = 8 * detail::kWindowBytes;

// With another job on one of two cores, the second thread gets a core's share only as the
// scheduler moves the three around, which it does over tens of milliseconds: a shorter read on
// two threads waits for the slower half, and is slower than one. With `yes` on one core, one
// thread read 78 MB faster than two (928 against 880 MiB/s) and two read 313 MB faster than one
// (947 against 887 MiB/s; docs/performance.md): the line lies between.
constexpr std::size_t kSplitBusyBytes = 128 * detail::kWindowBytes;

// Whether ImportOptions::threads 0 reads a text of `size` bytes on two threads: long enough,
// with two cores to run on, and either both idle now or the text long enough to share one.
bool two_threads_pay(std::size_t size) {
  if (size < kSplitBytes || detail::usable_cores() < 2) return false;
  return size >= kSplitBusyBytes || detail::idle_cores() >= 2;
}

// Where a text read on two threads is split: the ',' nearest before its middle that follows a
// '}' and precedes a '{' (between two events, likely: the walk checks), at least four windows
// from either end; 0 when there is none.
std::size_t split_point(std::string_view text, std::size_t window) {
  const std::size_t n = text.size();
  if (window > detail::kWindowBytes || n < 8 * window) return 0;
  auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  for (std::size_t c = n / 2; c > n / 2 - window; --c) {
    if (text[c] != ',') continue;
    std::size_t b = c;
    while (b > 0 && space(text[b - 1])) --b;
    if (b == 0 || text[b - 1] != '}') continue;
    std::size_t f = c + 1;
    while (f < n && space(text[f])) ++f;
    if (f < n && text[f] == '{') return c;
  }
  return 0;
}

}  // namespace

model::Expected<ImportedRank> import_trace_text(std::string text, const std::string& where,
                                                int rank_hint, FileReport& report) {
  return import_trace_text(std::move(text), where, rank_hint, report, ImportOptions{});
}

model::Expected<ImportedRank> import_trace_text(std::string text, const std::string& where,
                                                int rank_hint, FileReport& report,
                                                const ImportOptions& options) {
  return import_trace_text(model::FileText(std::move(text)), where, rank_hint, report, options);
}

model::Expected<ImportedRank> import_trace_text(model::FileText text, const std::string& where,
                                                int rank_hint, FileReport& report,
                                                const ImportOptions& options) {
  const std::string& kernel = options.kernel;
  const std::size_t window = options.window_bytes > 0 ? options.window_bytes : detail::kWindowBytes;
  const auto kernels = detail::runnable_kernels();
  const Kernel* k = &kernels.front();
  if (!kernel.empty()) {
    k = nullptr;
    std::string names;
    for (const auto& c : kernels) {
      if (kernel == c.name) k = &c;
      names += names.empty() ? c.name : std::string(", ") + c.name;
    }
    if (k == nullptr) {
      return model::Error{"trace reader kernel '" + kernel + "' is not one this CPU runs (" +
                          names + ")"};
    }
  }
  report.file = where;
  report.bytes = static_cast<std::int64_t>(text.size());
  auto attempt = [&](model::FileText& t, ImportedRank& rank, FileReport& rep, bool& inside,
                     bool& seen) -> model::Expected<void> {
    rank = ImportedRank{};
    rank.rank = rank_hint;
    rank.file = where;
    FileReport fresh;
    fresh.file = rep.file;
    fresh.bytes = rep.bytes;
    rep = fresh;
    const bool two = options.threads == 2 || (options.threads == 0 && two_threads_pay(t.size()));
    const std::size_t split = two ? split_point(t.view(), window) : 0;
    return detail::read_trace_events(t, where, *k, window, split, rank, rep, seen, inside);
  };
  const std::string not_json = where + kNotJson;
  const std::string trailing = where + detail::kTrailingJson;
  auto positioned = [&](const model::Error& e) {
    if (e.message == trailing) {
      return invalid_json(text.view(), where, "a second JSON document after the trace");
    }
    return e.message == not_json ? invalid_json(text.view(), where, "not valid JSON") : e;
  };
  ImportedRank rank;
  bool inside = false;
  bool seen = false;
  auto first = attempt(text, rank, report, inside, seen);
  if (first && !inside) return rank;
  // The events read to their end and then an error (a value out of range after them, a second
  // document): the text is whole, nothing to repair.
  if (!first && !inside && seen) return positioned(first.error());
  // Not a trace at all: no traceEvents array opened.
  if (text.view().find("\"traceEvents\"") == std::string_view::npos) {
    if (!first) return positioned(first.error());
    return model::Error{where + ": not a trace (no 'traceEvents' array)"};
  }
  // A whole JSON value and more after it is not a cut tail: named, not repaired away.
  if (const std::size_t at = trailing_json_at(text.view()); at != std::string_view::npos) {
    return model::Error{where + ": a second JSON document after the trace: " +
                        model::text_position(text.view(), at)};
  }
  // (the repairs read a string: a mapped text is copied on this path only)
  const std::string whole(text.view());
  std::string repaired;
  std::int64_t dropped = 0;
  auto ours = repair_truncated_trace(whole, where);
  if (ours && ours->repaired) {
    repaired = std::move(ours->text);
    dropped = ours->dropped_bytes;
  } else if (auto g = generic_repair(whole)) {
    dropped = static_cast<std::int64_t>(whole.size()) - static_cast<std::int64_t>(g->size()) + 2;
    repaired = std::move(*g);
  } else {
    if (!first) return positioned(first.error());
    return invalid_json(whole, where,
                        "malformed JSON inside 'traceEvents' that cannot be repaired");
  }
  inside = false;
  seen = false;
  model::FileText repaired_text(std::move(repaired));
  auto second = attempt(repaired_text, rank, report, inside, seen);
  if (!second) return positioned(second.error());
  if (inside) {
    return invalid_json(whole, where,
                        "malformed JSON inside 'traceEvents' that cannot be repaired");
  }
  report.bytes = static_cast<std::int64_t>(text.size());
  report.truncated = true;
  report.dropped_bytes = dropped;
  report.problems.push_back(
      ImportProblem{"truncated tail", 1,
                    "the file ends inside an event; " + std::to_string(dropped) +
                        " bytes dropped after event " + std::to_string(report.events - 1)});
  return rank;
}

}  // namespace dagsgd::trace
