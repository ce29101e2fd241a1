// Runs the dagsgd binary as a user would and captures its exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
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

}  // namespace dagsgd::testing
