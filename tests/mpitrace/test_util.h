// Helpers for the tracer's tests: temp dirs, running commands, reading traces with nlohmann.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "dagsgd/model/io.h"
#include "dagsgd/trace/trace_repair.h"

namespace dagsgd::mpitrace::testing {

inline std::string fresh_dir(const std::string& name) {
  std::filesystem::path p = ::testing::TempDir();
  p /= "mpitrace-" + std::to_string(::getpid()) + "-" + name;
  std::filesystem::remove_all(p);
  return p.string();
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

inline CommandResult run(const std::string& command) {
  CommandResult r;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// mpirun with what our CI needs: root inside containers, more ranks than cores.
inline std::string mpirun(int ranks) {
  std::string s = std::string(DAGSGD_MPIEXEC) + " --oversubscribe -np " + std::to_string(ranks);
  if (::geteuid() == 0) s += " --allow-run-as-root";
  return s;
}

// Parses a trace file, repairing an unclosed tail first (as every reader must).
inline nlohmann::json read_trace(const std::string& path) {
  auto text = model::read_file(path);
  EXPECT_TRUE(text.ok()) << path;
  if (!text.ok()) return {};
  auto fixed = trace::repair_truncated_trace(*text, path);
  EXPECT_TRUE(fixed.ok()) << (fixed.ok() ? "" : fixed.error().message);
  if (!fixed.ok()) return {};
  auto j = nlohmann::json::parse(fixed->text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << path;
  return j;
}

}  // namespace dagsgd::mpitrace::testing
