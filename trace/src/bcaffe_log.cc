// B-Caffe per-tensor log reader: "I0207 16:23:08.165047 35803 distributed.cpp:112] [id, n,
// backward_us, allreduce_us(, merged_us)]", one dump per logged iteration.
#include "dagsgd/trace/bcaffe_log.h"

#include <sstream>

#include "dagsgd/model/io.h"
#include "log_text.h"

namespace dagsgd::trace {
namespace {

using log_text::shown;
using log_text::trim;
using model::Error;
using model::Expected;

struct Dump {
  std::vector<BcaffeTensor> tensors;
  int first_line = 0;
  bool all_zero = true;
};

// What a record may state (docs/limits.md): up to 10 million tensors of up to 1e15 elements,
// times below kMaxDuration (1e12 us).
constexpr double kMaxParamId = 1e7;
constexpr double kMaxElements = 1e15;
constexpr double kMaxTimeUs = 1e12;

bool parse_number(const std::string& s, double& out) {
  return log_text::parse_double(trim(s), out);
}

}  // namespace

Expected<BcaffeLog> parse_bcaffe_log(const std::string& text, const std::string& where) {
  std::vector<Dump> dumps;
  int ignored = 0;
  log_text::Lines lines(text, "b-caffe log '" + where + "'");
  auto fail = [&lines](const std::string& what) { return lines.error(what); };
  std::string line;
  while (lines.next(line)) {
    // The glog message follows the "file:line] " prefix; records are bracketed lists.
    const auto prefix_end = line.find("] ");
    const std::string msg =
        prefix_end == std::string::npos ? line : trim(line.substr(prefix_end + 2));
    if (msg.empty() || msg[0] != '[') {
      ++ignored;
      continue;
    }
    if (msg.back() != ']') return fail("tensor record does not end with ']'");
    std::vector<double> fields;
    std::istringstream list(msg.substr(1, msg.size() - 2));
    std::string item;
    while (std::getline(list, item, ',')) {
      double v = 0;
      if (!parse_number(item, v)) return fail("'" + shown(trim(item)) + "' is not a number");
      fields.push_back(v);
    }
    if (fields.size() != 4 && fields.size() != 5) {
      return fail("expected [param_id, elements, backward_us, allreduce_us(, merged_us)], got " +
                  std::to_string(fields.size()) + " fields");
    }
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (fields[i] < 0) return fail("field " + std::to_string(i + 1) + " is negative");
    }
    if (fields[0] != std::floor(fields[0]) || fields[1] != std::floor(fields[1])) {
      return fail("param_id and elements must be whole numbers");
    }
    if (fields[0] > kMaxParamId) return fail("param_id is out of range (at most 1e7)");
    if (fields[1] > kMaxElements) return fail("elements is out of range (at most 1e15)");
    for (std::size_t i = 2; i < fields.size(); ++i) {
      if (fields[i] >= kMaxTimeUs) {
        return fail("field " + std::to_string(i + 1) + " is out of range (below 1e12 us)");
      }
    }
    BcaffeTensor t;
    t.param_id = static_cast<int>(fields[0]);
    t.elements = static_cast<std::int64_t>(fields[1]);
    t.backward_us = fields[2];
    t.allreduce_us = fields[3];
    if (fields.size() == 5) t.merged_allreduce_us = fields[4];
    if (t.param_id == 0) {
      dumps.push_back(Dump{{}, lines.number(), true});
    } else {
      if (dumps.empty()) return fail("param_id " + std::to_string(t.param_id) + " before param 0");
      const auto& prev = dumps.back().tensors.back();
      if (t.param_id != prev.param_id + 1) {
        return fail("param_id " + std::to_string(t.param_id) + " follows " +
                    std::to_string(prev.param_id));
      }
      if (t.merged_allreduce_us.has_value() != prev.merged_allreduce_us.has_value()) {
        return fail("column count differs from the previous record");
      }
    }
    Dump& d = dumps.back();
    if (t.backward_us != 0 || t.allreduce_us != 0 || t.merged_allreduce_us.value_or(0) != 0) {
      d.all_zero = false;
    }
    d.tensors.push_back(t);
  }
  if (dumps.empty()) return Error{"b-caffe log '" + where + "': no tensor records"};
  BcaffeLog log;
  log.dumps = static_cast<int>(dumps.size());
  log.ignored_lines = ignored;
  int chosen = -1;
  for (int i = 0; i < log.dumps; ++i) {
    if (dumps[static_cast<std::size_t>(i)].all_zero) {
      ++log.zero_dumps;
    } else {
      chosen = i;
    }
  }
  if (chosen < 0) {
    return Error{"b-caffe log '" + where + "': all " + std::to_string(log.dumps) +
                 " dumps are all zeros"};
  }
  auto& d = dumps[static_cast<std::size_t>(chosen)];
  log.tensors = std::move(d.tensors);
  log.chosen_dump = chosen;
  log.first_line = d.first_line;
  log.skipped = log.dumps - 1;
  return log;
}

Expected<BcaffeLog> read_bcaffe_log(const std::string& path) {
  auto text = model::read_file(path, model::kMaxDocumentBytes);
  DAGSGD_TRY(text);
  return parse_bcaffe_log(*text, path);
}

}  // namespace dagsgd::trace
