// fork/exec/waitpid with signal forwarding; the only async-signal work is kill(2) on one pid.
#include "dagsgd/runtime/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace dagsgd::runtime {

namespace {

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_stop = 0;

void forward(int sig) {
  g_stop = sig;
  if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
}

// Installs the forwarding handlers for the life of one child and restores the caller's after.
class Forwarding {
 public:
  explicit Forwarding(bool sigint) {
    struct sigaction sa {};
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &old_term_);
    // A SIGINT we do not forward is still caught: the child gets it from the terminal, and we
    // must outlive the child to clean up after it.
    struct sigaction keep {};
    keep.sa_handler = sigint ? forward : SIG_IGN;  // NOLINT
    sigemptyset(&keep.sa_mask);
    sigaction(SIGINT, &keep, &old_int_);
  }
  ~Forwarding() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  Forwarding(const Forwarding&) = delete;
  Forwarding& operator=(const Forwarding&) = delete;
  // The handlers the child must run with (exec resets caught signals, not ignored ones).
  void restore_in_child() const {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// This environment with `extra` set; built before fork, since setenv is no async-signal-safe call.
std::vector<std::string> child_environment(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry = *e;
    std::string key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [k, v] : extra) replaced = replaced || k == key;
    if (!replaced) out.push_back(std::move(entry));
  }
  for (const auto& [k, v] : extra) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// In the child, before exec: only async-signal-safe calls (the failure message aside).
[[noreturn]] void exec_child(const std::vector<char*>& args, char** envp, const ProcessOptions& o) {
  if (!o.log.empty()) {
    int log_fd = open(o.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) _exit(127);
    int out_fd = log_fd;
    if (!o.stdout_file.empty()) {
      out_fd = open(o.stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (out_fd < 0) _exit(127);
    }
    dup2(out_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
  }
  environ = envp;
  execvp(args[0], args.data());
  std::fprintf(stderr, "dagsgd: error: cannot run '%s': %s\n", args[0], std::strerror(errno));
  _exit(127);
}

}  // namespace

int ProcessResult::status() const {
  if (!started) return -1;
  return signal != 0 ? 128 + signal : exit_code;
}

std::string ProcessResult::describe() const {
  if (!started) return "did not start";
  if (signal != 0) {
    return "was killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  }
  return "exited with status " + std::to_string(exit_code);
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  ProcessResult r;
  if (g_stop != 0) {
    r.signal = g_stop;
    return r;
  }
  if (argv.empty()) return r;
  std::vector<std::string> arg_strings = argv;
  std::vector<char*> args = pointers(arg_strings);
  std::vector<std::string> env_strings = child_environment(options.env);
  std::vector<char*> envp = pointers(env_strings);
  Forwarding forwarding(options.forward_sigint);
  pid_t pid = fork();
  if (pid < 0) return r;
  if (pid == 0) {
    forwarding.restore_in_child();
    exec_child(args, envp.data(), options);
  }
  g_child = pid;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      g_child = 0;
      return r;
    }
  }
  g_child = 0;
  r.started = true;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

int stop_signal() { return g_stop; }

std::string self_exe(const std::string& fallback) {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? fallback : exe.string();
}

model::Expected<std::string> find_own_library(const char* env, const std::string& file,
                                              const std::vector<std::string>& beside,
                                              const std::string& what, const std::string& target) {
  namespace fs = std::filesystem;
  if (const char* set = std::getenv(env); set != nullptr && *set != '\0') {
    if (!fs::is_regular_file(set)) {
      return model::Error{std::string("$") + env + " names '" + set + "', which is not a file"};
    }
    return fs::absolute(set).string();
  }
  const std::string exe = self_exe();
  std::string tried;
  if (!exe.empty()) {
    const fs::path dir = fs::path(exe).parent_path();
    for (const std::string& where : beside) {
      const fs::path c = dir / where / file;
      if (fs::is_regular_file(c)) return fs::weakly_canonical(c).string();
      tried += (tried.empty() ? "" : ", ") + c.lexically_normal().string();
    }
  }
  return model::Error{"cannot find " + what + " " + file + " (looked in " + tried +
                      "); build the '" + target + "' target or set $" + env};
}

std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  std::string cur;
  for (char ch : all) {
    if (ch == '\0') {
      argv.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(ch);
    }
  }
  if (!cur.empty()) argv.push_back(cur);
  return argv;
}

}  // namespace dagsgd::runtime
