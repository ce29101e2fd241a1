// OSU micro-benchmark and nccl-tests log reader: plain line parsing, strict inside a table so a
// damaged log is reported (file and line) instead of silently dropping sizes.
#include "dagsgd/trace/osu_log.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <sstream>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/io.h"
#include "log_text.h"

namespace dagsgd::trace {
namespace {

using log_text::parse_double;
using log_text::shown;
using log_text::trim;
using model::Error;
using model::Expected;

std::vector<std::string> split_ws(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string tok;
  while (in >> tok) out.push_back(tok);
  return out;
}

bool parse_int(const std::string& s, std::int64_t& out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && ptr == end;
}

int find_token(const std::vector<std::string>& toks, const std::string& name) {
  for (std::size_t i = 0; i < toks.size(); ++i) {
    if (toks[i] == name) return static_cast<int>(i);
  }
  return -1;
}

enum class Table { kNone, kOsu, kNccl };

// What a row may state (docs/limits.md): a message of at most 1e15 bytes (1 PB), a latency below
// kMaxDuration (1e12 us), at most 2^20 ranks.
constexpr std::int64_t kMaxBytes = 1'000'000'000'000'000;
constexpr double kMaxLatencyUs = 1e12;

}  // namespace

Expected<LatencyLog> parse_latency_log(const std::string& text, const std::string& where) {
  LatencyLog log;
  Table table = Table::kNone;
  int nccl_size_col = -1;
  int nccl_time_col = -1;
  int nccl_rank_lines = 0;
  int prefix_line = 0;                    // first row with a "<ranks>," prefix
  int osu_max_col = -1;                   // the "Max Latency(us)" column of a full OSU table
  int osu_min_col = -1;                   // and its "Min Latency(us)" column
  std::map<std::int64_t, int> size_line;  // each size's row, to refuse a size measured twice
  log_text::Lines lines(text, "log '" + where + "'");
  auto fail = [&lines](const std::string& what) { return lines.error(what); };
  std::string line;
  while (lines.next(line)) {
    if (line[0] == '#') {
      const auto text_start = line.find_first_not_of('#');
      const std::string body = text_start == std::string::npos ? "" : trim(line.substr(text_start));
      const auto toks = split_ws(body);
      if (body.find("back to back") != std::string::npos) log.back_to_back = true;
      if (body.rfind("OSU", 0) == 0) {
        log.benchmark = body;
      } else if (body.rfind("Size", 0) == 0 && body.find("Latency") != std::string::npos) {
        if (table == Table::kNccl) return fail("an OSU table header inside a nccl-tests log");
        table = Table::kOsu;
        log.format = "osu";
        // The full table (osu_allreduce -f, dagsgd-allreduce-bench): "Size Avg Latency(us)
        // Min Latency(us) Max Latency(us) Iterations"; each "<X> Latency(us)" is one column.
        osu_max_col = -1;
        osu_min_col = -1;
        int col = 1;
        for (std::size_t i = 1; i + 1 < toks.size(); ++i) {
          if (toks[i + 1] != "Latency(us)") continue;
          if (toks[i] == "Max") osu_max_col = col;
          if (toks[i] == "Min") osu_min_col = col;
          ++col;
        }
      } else if (find_token(toks, "size") >= 0 && find_token(toks, "count") >= 0 &&
                 find_token(toks, "time") >= 0) {
        if (table == Table::kOsu) return fail("a nccl-tests table header inside an OSU log");
        table = Table::kNccl;
        log.format = "nccl-tests";
        nccl_size_col = find_token(toks, "size");
        nccl_time_col = find_token(toks, "time");  // the first: out-of-place
      } else if (!toks.empty() && toks[0] == "Rank" && body.find("device") != std::string::npos) {
        ++nccl_rank_lines;  // nccl-tests prints one line per rank's device
      } else if (body.rfind("nccl-tests", 0) == 0 || body.rfind("Collective test", 0) == 0) {
        if (log.benchmark.empty()) log.benchmark = body;
      }
      continue;
    }
    // Launchers print warnings before the benchmark starts; only table rows must parse.
    if (table == Table::kNone) continue;
    const auto toks = split_ws(line);
    LatencyPoint pt;
    pt.line = lines.number();
    std::int64_t size = 0;
    if (table == Table::kOsu) {
      if (toks.size() < 2) {
        return fail("expected '<size> <avg latency us>', got '" + shown(line) + "'");
      }
      std::string size_tok = toks[0];
      if (const auto comma = size_tok.find(','); comma != std::string::npos) {
        std::int64_t ranks = 0;
        if (!parse_int(size_tok.substr(0, comma), ranks) || ranks < 1 ||
            ranks > model::kMaxWorkers) {
          return fail("bad rank prefix in '" + shown(toks[0]) + "' (ranks from 1 to " +
                      std::to_string(model::kMaxWorkers) + ")");
        }
        if (log.ranks && *log.ranks != ranks) {
          return fail("rank prefix " + std::to_string(ranks) + " differs from " +
                      std::to_string(*log.ranks) + " on line " + std::to_string(prefix_line));
        }
        if (!log.ranks) prefix_line = lines.number();
        log.ranks = static_cast<int>(ranks);
        size_tok = size_tok.substr(comma + 1);
      }
      if (!parse_int(size_tok, size) || size < 0 || size > kMaxBytes) {
        return fail("size '" + shown(toks[0]) + "' is not an integer from 0 to 1e15");
      }
      if (!parse_double(toks[1], pt.latency_us) || pt.latency_us < 0 ||
          pt.latency_us >= kMaxLatencyUs) {
        return fail("latency '" + shown(toks[1]) + "' is not a number from 0 to below 1e12 us");
      }
      auto column = [&](int c, const char* name, double& value) -> Expected<void> {
        if (c <= 0) return {};
        const auto col = static_cast<std::size_t>(c);
        if (toks.size() <= col) {
          return fail(std::string("the header has a ") + name + " Latency(us) column, but the " +
                      "row has " + std::to_string(toks.size()) + " columns");
        }
        if (!parse_double(toks[col], value) || value < 0 || value >= kMaxLatencyUs) {
          std::string lower = name;
          lower[0] = static_cast<char>(lower[0] - 'A' + 'a');
          return fail(lower + " latency '" + shown(toks[col]) +
                      "' is not a number from 0 to below 1e12 us");
        }
        return {};
      };
      DAGSGD_TRY(column(osu_max_col, "Max", pt.max_latency_us));
      DAGSGD_TRY(column(osu_min_col, "Min", pt.min_latency_us));
    } else {
      const auto need = static_cast<std::size_t>(std::max(nccl_size_col, nccl_time_col)) + 1;
      if (toks.size() < need) {
        return fail("expected at least " + std::to_string(need) + " columns, got " +
                    std::to_string(toks.size()));
      }
      const auto& size_tok = toks[static_cast<std::size_t>(nccl_size_col)];
      const auto& time_tok = toks[static_cast<std::size_t>(nccl_time_col)];
      if (!parse_int(size_tok, size) || size < 0 || size > kMaxBytes) {
        return fail("size '" + shown(size_tok) + "' is not an integer from 0 to 1e15");
      }
      if (!parse_double(time_tok, pt.latency_us) || pt.latency_us < 0 ||
          pt.latency_us >= kMaxLatencyUs) {
        return fail("time '" + shown(time_tok) + "' is not a number from 0 to below 1e12 us");
      }
    }
    // Two latencies of one size are two measurements that disagree or a log pasted twice;
    // averaging them would hide either, so the log must be split (or fixed) by its owner.
    if (auto [it, fresh] = size_line.emplace(size, lines.number()); !fresh) {
      return fail("size " + std::to_string(size) + " was already measured on line " +
                  std::to_string(it->second) + "; one latency per size (split the log)");
    }
    pt.bytes = size;
    log.points.push_back(pt);
  }
  if (table == Table::kNone) {
    return Error{"log '" + where +
                 "': no OSU ('# Size  Avg Latency(us)') or nccl-tests ('size count type ... "
                 "time') table header"};
  }
  if (log.points.empty()) return Error{"log '" + where + "': the table has no rows"};
  if (nccl_rank_lines > model::kMaxWorkers) {
    return Error{"log '" + where + "': " + std::to_string(nccl_rank_lines) +
                 " rank device lines: out of range (at most " + std::to_string(model::kMaxWorkers) +
                 ")"};
  }
  if (table == Table::kNccl && nccl_rank_lines > 0) log.ranks = nccl_rank_lines;
  return log;
}

Expected<LatencyLog> read_latency_log(const std::string& path) {
  auto text = model::read_file(path, model::kMaxDocumentBytes);
  DAGSGD_TRY(text);
  return parse_latency_log(*text, path);
}

model::Expected<LatencyLog> median_latency_log(const std::vector<LatencyLog>& logs,
                                               const std::vector<std::string>& names) {
  if (logs.empty()) return model::Error{"no benchmark logs to take the median of"};
  const auto& first = logs.front().points;
  for (std::size_t l = 1; l < logs.size(); ++l) {
    bool same = logs[l].points.size() == first.size();
    for (std::size_t i = 0; same && i < first.size(); ++i) {
      same = logs[l].points[i].bytes == first[i].bytes;
    }
    const auto name = [&](std::size_t k) {
      return k < names.size() ? names[k] : "#" + std::to_string(k);
    };
    if (!same) {
      return model::Error{"log '" + name(l) + "': its sizes differ from those of '" + name(0) +
                          "'; a median needs the same sizes"};
    }
    if (logs[l].back_to_back != logs.front().back_to_back) {
      return model::Error{"log '" + name(l) + "': timed " +
                          (logs[l].back_to_back ? "back to back" : "between barriers") + ", but '" +
                          name(0) + "' " +
                          (logs.front().back_to_back ? "back to back" : "between barriers") +
                          "; a median needs one way"};
    }
  }
  bool full = true;
  for (const auto& log : logs) {
    for (const auto& p : log.points) full = full && p.min_latency_us >= 0 && p.max_latency_us >= 0;
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  LatencyLog out;
  out.format = logs.front().format;
  out.benchmark = logs.front().benchmark;
  out.ranks = logs.front().ranks;
  out.back_to_back = logs.front().back_to_back;
  for (std::size_t i = 0; i < first.size(); ++i) {
    std::vector<double> avg;
    std::vector<double> fastest;
    std::vector<double> slowest;
    for (const auto& log : logs) {
      avg.push_back(log.points[i].latency_us);
      fastest.push_back(log.points[i].min_latency_us);
      slowest.push_back(log.points[i].max_latency_us);
    }
    LatencyPoint p;
    p.bytes = first[i].bytes;
    p.latency_us = median(avg);
    if (full) {
      p.min_latency_us = median(fastest);
      p.max_latency_us = median(slowest);
    }
    out.points.push_back(p);
  }
  return out;
}

std::string osu_table(const LatencyLog& log, const std::string& comment, int iterations) {
  bool full = true;
  for (const auto& p : log.points) full = full && p.min_latency_us >= 0 && p.max_latency_us >= 0;
  std::string text = "# " + comment;
  if (log.back_to_back && comment.find("back to back") == std::string::npos) {
    text += ", back to back";
  }
  text += "\n";
  text += full ? "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n"
               : "# Size       Avg Latency(us)\n";
  for (const auto& p : log.points) {
    char row[160];
    if (full) {
      std::snprintf(row, sizeof row, "%-10lld%18.2f%18.2f%18.2f%12d\n",
                    static_cast<long long>(p.bytes), p.latency_us, p.min_latency_us,
                    p.max_latency_us, iterations);
    } else {
      std::snprintf(row, sizeof row, "%-10lld%18.2f\n", static_cast<long long>(p.bytes),
                    p.latency_us);
    }
    text += row;
  }
  return text;
}

}  // namespace dagsgd::trace
