// Child processes for the commands that drive others (`dagsgd collect`, `dagsgd validate`): run
// one with its output in a log, pass the user's Ctrl-C / SIGTERM on to it, report how it ended.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "dagsgd/model/expected.h"

namespace dagsgd::runtime {

struct ProcessOptions {
  // Added to (or replacing in) the child's environment.
  std::vector<std::pair<std::string, std::string>> env;
  // Where stdout and stderr go, appended; "" leaves both on this process's.
  std::string log;
  // stdout alone, truncated; "" sends it with stderr.
  std::string stdout_file;
  // SIGINT is passed on too. Leave it off where the child shares the terminal's process group:
  // Ctrl-C reaches it already, and mpirun reads a second one as "abort now".
  bool forward_sigint = true;
};

struct ProcessResult {
  bool started = false;  // false: fork failed, or a stop signal came before (see below)
  int exit_code = -1;    // when it exited (127: the program could not be run)
  int signal = 0;        // when a signal ended it
  bool ok() const { return started && signal == 0 && exit_code == 0; }
  // The shell's convention: the exit code, 128 + signal, or -1 when it never started.
  int status() const;
  // "exited with status 3", "was killed by signal 9 (Killed)", "did not start".
  std::string describe() const;
};

// Runs argv[0] (searched in PATH) and waits for it. While it runs, SIGTERM (and SIGINT if
// `forward_sigint`) sent to this process go on to the child instead of ending us, so the caller
// can clean up after it. After such a signal every later call starts nothing and reports that
// signal: a batch of steps stops at the first interruption.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// The SIGINT/SIGTERM that interrupted a run_process() child, 0 if none did.
int stop_signal();

// This executable's path (/proc/self/exe), or `fallback` where it cannot be read.
std::string self_exe(const std::string& fallback = "");

// One of the project's own shared libraries (`file`): $`env` when set (it must name a file), else
// the first of `beside` (directories relative to this executable's: the build tree's place, an
// install's) that holds it. The error names `what` it is, where it looked, and the CMake
// `target` that builds it.
model::Expected<std::string> find_own_library(const char* env, const std::string& file,
                                              const std::vector<std::string>& beside,
                                              const std::string& what, const std::string& target);

// This process's argv as the kernel has it (/proc/self/cmdline), for manifests.
std::vector<std::string> own_command_line();

}  // namespace dagsgd::runtime
