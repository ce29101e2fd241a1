// Command-line parsing shared by the MPI micro-benchmarks (dagsgd-allreduce-bench,
// dagsgd-pingpong-bench): "--name N" / "--name=N" non-negative integers and value-less flags.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <string>

namespace dagsgd::bench {

struct IntOption {
  const char* name;
  long* target;
};

struct FlagOption {
  const char* name;
  bool* target;
};

// Returns "" or the error naming the option; -h / --help set `help` and stop.
inline std::string parse_args(int argc, char** argv, std::initializer_list<IntOption> ints,
                              std::initializer_list<FlagOption> flags, bool& help) {
  auto valid = [&] {
    std::string v;
    for (const auto& o : ints) v += std::string(v.empty() ? "" : ", ") + o.name;
    for (const auto& f : flags) v += std::string(", ") + f.name;
    return v + ", --help";
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      help = true;
      return "";
    }
    bool* flag = nullptr;
    for (const auto& f : flags) {
      if (arg == f.name) flag = f.target;
    }
    if (flag != nullptr) {
      *flag = true;
      continue;
    }
    std::string value;
    auto eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return "option '" + arg + "' needs a value";
    }
    long* target = nullptr;
    for (const auto& o : ints) {
      if (arg == o.name) target = o.target;
    }
    if (target == nullptr) return "unknown option '" + arg + "' (valid: " + valid() + ")";
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(value.c_str(), &end, 10);
    if (errno != 0 || end == value.c_str() || *end != '\0' || v < 0) {
      return "option '" + arg + "': '" + value + "' is not a non-negative integer";
    }
    *target = v;
  }
  return "";
}

}  // namespace dagsgd::bench
