// What Holistic Trace Analysis (HTA; facebookresearch/HolisticTraceAnalysis at commit f4d0062)
// relies on in a trace directory, restated from its source, because HTA itself is not installable
// where the tests run. Each rule cites the line it mirrors; docs/formats.md ("Holistic Trace
// Analysis") lists the same rules.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace dagsgd::testing::hta {

// hta/common/trace_file.py:32-34: every name in the directory that ends in ".gz" or ".json" is
// taken for a rank trace.
inline std::vector<std::string> trace_files_of(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& ent : std::filesystem::directory_iterator(dir)) {
    const std::string n = ent.path().filename().string();
    auto ends = [&n](const std::string& s) {
      return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0;
    };
    if (ends(".gz") || ends(".json")) out.push_back(ent.path().string());
  }
  return out;
}

// hta/common/trace_file.py:45-60: the rank is the pattern "rank":\s+(\d+) on the first line that
// has it; a file without one is taken for rank 0 (line 73). nullopt here for that case.
inline std::optional<int> rank_of(const std::string& path) {
  static const std::regex kRank(R"re("rank":\s+(\d+))re");
  std::ifstream in(path);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, kRank)) return std::stoi(m[1].str());
  }
  return std::nullopt;
}

// The rank map HTA builds for a directory (trace_file.py:14-75): rank -> file; a file without a
// rank counts as rank 0 and a later file of the same rank replaces an earlier one.
inline std::map<int, std::string> rank_map(const std::string& dir) {
  std::map<int, std::string> out;
  for (const auto& f : trace_files_of(dir)) out[rank_of(f).value_or(0)] = f;
  return out;
}

// hta/common/types.py:103-107 (ProfilerStepGroupingPattern) and hta/common/trace.py:189: the
// iteration spans.
inline std::optional<int> profiler_step(const std::string& name) {
  static const std::regex kStep(R"(^ProfilerStep#(\d+))");
  std::smatch m;
  if (!std::regex_search(name, m, kStep)) return std::nullopt;
  return std::stoi(m[1].str());
}

// An int arg as HTA's parser reads it (hta/common/trace_parser.py:338-347): absent -> the
// default, -1 for `stream` and `correlation` (hta/configs/default_event_args.py:71-75, 111-115).
inline long long int_arg(const nlohmann::json& e, const char* key) {
  if (!e.contains("args") || !e["args"].contains(key)) return -1;
  const auto& v = e["args"][key];
  return v.is_number_integer() ? v.get<long long>() : -1;
}

// hta/common/trace_filter.py:330 (_filter_gpu_kernels_with_cuda_sync): a device event is one with
// stream >= 0 and correlation >= 0; every other event is a CPU event.
inline bool on_device(const nlohmann::json& e) {
  return int_arg(e, "stream") >= 0 && int_arg(e, "correlation") >= 0;
}

// hta/common/types.py:135-137 (KERNEL_CATEGORY_PATTERN): the categories of device work.
inline bool kernel_category(const std::string& cat) {
  static const std::regex kCat("(kernel)|(gpu_mem.+)");
  return std::regex_search(cat, kCat);
}

// hta/common/trace_symbol_table.py:319-356: the runtime calls a device event is linked to by
// `correlation` (hta/common/trace.py:111-130 merges CPU and device events on it).
inline bool launch_call(const std::string& name) {
  return name == "cudaLaunchKernel" || name == "cudaLaunchKernelExC" || name == "cuLaunchKernel" ||
         name == "cuLaunchKernelEx" || name == "cudaMemcpyAsync" || name == "cudaMemsetAsync";
}

}  // namespace dagsgd::testing::hta
