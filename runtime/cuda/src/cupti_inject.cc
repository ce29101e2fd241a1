// CUDA injection library (CUDA_INJECTION64_PATH): traces the kernels, copies, API calls and syncs
// of any CUDA program into a Kineto-layout trace, for `dagsgd collect` on programs we did not
// build. The driver calls InitializeInjection() during cuInit.
//
// Environment:
//   DAGSGD_CUPTI_DIR       where to write; without it the library does nothing
//   DAGSGD_CUPTI_FLUSH_MS  how often a background thread flushes (default 1000; 0 = only at exit)
//   DAGSGD_RUN_ID          the run's id (`dagsgd collect` sets it), written into distributedInfo
// Output: <dir>/rank-<r>.cupti.trace.json under an MPI launcher (launcher.h), else
// <dir>/pid-<pid>.cupti.trace.json. ts=0 is the CLOCK_MONOTONIC instant of initialisation,
// written as baseTimeNanoseconds.
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "dagsgd/runtime/cuda/cupti_collector.h"
#include "dagsgd/runtime/launcher.h"

namespace dagsgd::runtime {
namespace {

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// An injected library has no caller to return errors to: stderr, one line, is the only channel.
void report(const std::string& message) {
  std::fprintf(stderr, "dagsgd-cupti: error: %s\n", message.c_str());
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > 1'000'000'000) {
    report(std::string(name) + "='" + v + "' is not a non-negative integer; using " +
           std::to_string(fallback));
    return fallback;
  }
  return static_cast<int>(n);
}

struct Session {
  std::unique_ptr<CuptiCollector> collector;
  trace::TraceWriter writer;
  std::thread flusher;
  std::mutex mu;
  std::condition_variable wake;
  bool stop = false;
};

Session* g_session = nullptr;

void flush_loop(Session* s, int period_ms) {
  std::unique_lock<std::mutex> lock(s->mu);
  while (!s->wake.wait_for(lock, std::chrono::milliseconds(period_ms), [s] { return s->stop; })) {
    if (auto r = s->collector->flush(s->writer); !r.ok()) report(r.error().message);
  }
}

void at_exit() {
  Session* s = g_session;
  if (s == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->stop = true;
  }
  s->wake.notify_all();
  if (s->flusher.joinable()) s->flusher.join();
  if (auto r = s->collector->finish(s->writer); !r.ok()) report(r.error().message);
  if (auto r = s->writer.close(); !r.ok()) report(r.error().message);
  // Collection is off and the collector unregistered; the Session itself is never freed, so no
  // static destructor running after this handler can find it half-destroyed.
  s->collector.reset();
}

int initialize() {
  const char* dir = std::getenv("DAGSGD_CUPTI_DIR");
  if (dir == nullptr || *dir == '\0' || g_session != nullptr) return 1;
  const std::optional<LauncherEnv> launcher = launcher_env();
  std::string path =
      std::string(dir) + "/" +
      (launcher ? "rank-" + std::to_string(launcher->rank) : "pid-" + std::to_string(::getpid())) +
      ".cupti.trace.json";
  std::int64_t base = monotonic_ns();
  // The collector first: without a GPU it fails and no empty trace file is left behind.
  CuptiCollectorOptions options;
  options.trace_base_ns = base;
  options.host_clock_ns = &monotonic_ns;
  auto collector = CuptiCollector::start(options);
  if (!collector.ok()) {
    report(collector.error().message);
    return 1;
  }
  const LauncherEnv where = launcher.value_or(LauncherEnv{});
  const char* run_id = std::getenv("DAGSGD_RUN_ID");
  auto writer = trace::TraceWriter::open(
      path, trace::DistributedInfo{where.rank, where.size, "mpi", run_id != nullptr ? run_id : ""},
      base);
  if (!writer.ok()) {
    report(writer.error().message);
    return 1;
  }
  auto* s = new Session;  // NOLINT: lives until process exit, see at_exit()
  s->collector = std::move(*collector);
  s->writer = std::move(*writer);
  g_session = s;
  int period = env_int("DAGSGD_CUPTI_FLUSH_MS", 1000);
  if (period > 0) s->flusher = std::thread(flush_loop, s, period);
  std::atexit(at_exit);
  return 1;
}

}  // namespace
}  // namespace dagsgd::runtime

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  try {
    return dagsgd::runtime::initialize();
  } catch (const std::exception& e) {  // never unwind into the CUDA driver
    dagsgd::runtime::report(e.what());
  } catch (...) {
    dagsgd::runtime::report("unknown exception during initialisation");
  }
  return 1;
}
