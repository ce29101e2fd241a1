// When libdagsgd-mpitrace.so traces: from MPI_Init (if DAGSGD_TRACE_DIR is set) to MPI_Finalize,
// exit() or a fatal signal, with a flusher thread so a SIGKILLed rank keeps what it completed.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "dagsgd/trace/manifest.h"
#include "wrappers.h"

namespace dagsgd::mpitrace {

namespace {

// Null while not tracing: every wrapper then costs one load and a branch.
std::atomic<Recorder*> g_recorder{nullptr};
// Stays set after MPI_Finalize so a late fatal signal still finds a closed, harmless recorder.
std::atomic<Recorder*> g_signal_recorder{nullptr};
std::atomic<int> g_next_thread{0};
// Set once this rank took part in the start clock sample: it must then take part in the end one
// too, even if its trace could not be opened, or the ranks that did would wait for it forever.
bool g_clock_synced = false;
thread_local int t_thread = -1;

}  // namespace

Recorder* active() { return g_recorder.load(std::memory_order_acquire); }

int thread_index() {
  if (t_thread < 0) t_thread = g_next_thread.fetch_add(1, std::memory_order_relaxed);
  return t_thread;
}

namespace {

struct sigaction g_previous[NSIG];
constexpr int kFatalSignals[] = {SIGSEGV, SIGABRT, SIGTERM, SIGBUS, SIGFPE, SIGINT};

void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  const struct sigaction& prev = g_previous[sig];
  bool prev_is_default = (prev.sa_flags & SA_SIGINFO) == 0 && prev.sa_handler == SIG_DFL;  // NOLINT
  if (Recorder* rec = g_signal_recorder.load(std::memory_order_acquire)) {
    // Closing the array is only right when the default action is about to end the process.
    rec->flush_from_signal(/*close=*/prev_is_default);
  }
  if ((prev.sa_flags & SA_SIGINFO) != 0) {
    if (prev.sa_sigaction != nullptr) prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;  // NOLINT
  if (prev.sa_handler == SIG_DFL) {        // NOLINT
    // Delivered again once this handler returns (the signal is blocked in here), now fatal.
    sigaction(sig, &prev, nullptr);
    raise(sig);
    return;
  }
  prev.sa_handler(sig);
}

void install_signal_handlers() {
  for (int sig : kFatalSignals) {
    struct sigaction sa {};
    sa.sa_sigaction = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigaction(sig, &sa, &g_previous[sig]);
  }
}

// Writes buffered events every interval, so a rank that blocks and then gets SIGKILLed (which
// no handler sees) has its completed events on disk.
std::mutex g_flusher_mu;
std::condition_variable g_flusher_cv;
bool g_flusher_stop = false;
std::thread* g_flusher = nullptr;

void start_flusher(Recorder* rec, long interval_ms) {
  if (interval_ms <= 0) return;
  // The thread blocks every signal (it inherits the mask), so a SIGTERM for the process is
  // handled by one of the program's threads, never by this one in the middle of a flush.
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  try {
    g_flusher = new std::thread([rec, interval_ms] {
      std::unique_lock<std::mutex> lock(g_flusher_mu);
      while (!g_flusher_stop) {
        g_flusher_cv.wait_for(lock, std::chrono::milliseconds(interval_ms));
        rec->flush();
      }
    });
  } catch (...) {
    // No thread: events still reach the file when the buffer fills and at the end.
    g_flusher = nullptr;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void stop_flusher() {
  if (g_flusher == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(g_flusher_mu);
    g_flusher_stop = true;
  }
  g_flusher_cv.notify_all();
  g_flusher->join();
  delete g_flusher;
  g_flusher = nullptr;
}

void warn(int rank, const std::string& message) {
  std::fprintf(stderr, "dagsgd-mpitrace: rank %d: %s\n", rank, message.c_str());
}

// Called at exit() when the program never reached MPI_Finalize: no end clock sample is possible.
void at_exit() {
  Recorder* rec = g_recorder.exchange(nullptr);
  if (rec == nullptr) return;
  try {
    stop_flusher();
    write_pending(rec, now_ns());
    (void)rec->finish(nullptr, "exit");
  } catch (...) {
  }
}

// Rank 0's DAGSGD_RUN_ID (set by `dagsgd collect`), or a fresh id, on every rank.
std::string agreed_run_id(int rank) {
  char id[128] = {};
  if (rank == 0) {
    const char* given = std::getenv("DAGSGD_RUN_ID");
    std::string s = given != nullptr && *given != '\0' ? given : runtime::make_run_id();
    s.copy(id, sizeof id - 1);
  }
  PMPI_Bcast(id, sizeof id, MPI_CHAR, 0, MPI_COMM_WORLD);
  return id;
}

}  // namespace

void start_tracing() {
  const char* dir = std::getenv("DAGSGD_TRACE_DIR");
  if (dir == nullptr || *dir == '\0') return;
  int rank = 0;
  int size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    RecorderConfig config;
    config.start = runtime::measure_clock_offset();
    std::int64_t base = rank == 0 ? now_ns() : 0;
    PMPI_Bcast(&base, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    g_clock_synced = true;
    config.base_ns = base;
    config.rank = rank;
    config.world_size = size;
    config.path = std::string(dir) + "/" + trace::rank_trace_name(rank);
    config.host = runtime::host_name();
    config.os_pid = getpid();
    config.run_id = agreed_run_id(rank);
    auto rec = Recorder::open(config);
    if (!rec.ok()) {
      warn(rank, rec.error().message + "; this rank is not traced");
      return;
    }
    init_tracking();
    Recorder* r = rec->release();
    g_signal_recorder.store(r, std::memory_order_release);
    g_recorder.store(r, std::memory_order_release);
    install_signal_handlers();
    std::atexit(at_exit);
    long interval_ms = 200;
    if (const char* f = std::getenv("DAGSGD_TRACE_FLUSH_MS")) interval_ms = std::atol(f);
    start_flusher(r, interval_ms);
  } catch (const std::exception& e) {
    warn(rank, std::string("tracing disabled: ") + e.what());
  }
}

void stop_tracing() {
  if (!g_clock_synced) return;
  g_clock_synced = false;
  Recorder* rec = g_recorder.exchange(nullptr);
  // Collective like the start sample (MPI_Finalize is collective too).
  runtime::ClockSample end = runtime::measure_clock_offset();
  if (rec == nullptr) return;
  try {
    stop_flusher();
    write_pending(rec, now_ns());
    auto rc = rec->finish(&end, "finalize");
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (!rc.ok()) warn(rank, rc.error().message);
  } catch (...) {
  }
}

}  // namespace dagsgd::mpitrace

namespace mt = dagsgd::mpitrace;

DAGSGD_EXPORT int MPI_Init(int* argc, char*** argv) {
  int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) mt::start_tracing();
  return rc;
}

DAGSGD_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) mt::start_tracing();
  return rc;
}

DAGSGD_EXPORT int MPI_Finalize() {
  mt::stop_tracing();
  return PMPI_Finalize();
}
