// Runs commands as a user would in a shell: the dagsgd binary with separate stdout/stderr, or any
// command line with both streams together. Shared by the CLI, MPI and GPU tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace dagsgd::testing {

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `args` is appended to the binary's path and run by /bin/sh (quote as needed).
inline CliResult run_cli(const std::string& args) {
  static int counter = 0;
  std::string base =
      "/tmp/dagsgd-cli-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  std::string cmd =
      std::string(DAGSGD_BINARY) + " " + args + " >" + base + ".out 2>" + base + ".err";
  int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

struct RunResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

// Runs `cmd` through the shell with stderr merged into stdout.
inline RunResult run(const std::string& cmd) {
  RunResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr) r.out += buf.data();
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace dagsgd::testing
