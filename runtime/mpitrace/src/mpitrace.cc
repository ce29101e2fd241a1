// libdagsgd-mpitrace.so: PMPI wrappers that record every traced MPI call of any program it is
// LD_PRELOADed into, once MPI_Init finds DAGSGD_TRACE_DIR set (docs/tracing.md).
#include <mpi.h>
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
#include <unordered_map>
#include <vector>

#include "dagsgd/mpitrace/recorder.h"
#include "dagsgd/runtime/clock_sync.h"

#define DAGSGD_EXPORT extern "C" __attribute__((visibility("default")))

namespace dagsgd::mpitrace {
namespace {

using runtime::now_ns;

// Null while not tracing: every wrapper then costs one load and a branch.
std::atomic<Recorder*> g_recorder{nullptr};
// Stays set after MPI_Finalize so a late fatal signal still finds a closed, harmless recorder.
std::atomic<Recorder*> g_signal_recorder{nullptr};
std::atomic<int> g_next_thread{0};
// Set once this rank took part in the start clock sample: it must then take part in the end one
// too, even if its trace could not be opened, or the ranks that did would wait for it forever.
bool g_clock_synced = false;
thread_local int t_thread = -1;

int thread_index() {
  if (t_thread < 0) t_thread = g_next_thread.fetch_add(1, std::memory_order_relaxed);
  return t_thread;
}

// --- Request tracking: a non-blocking operation becomes a span on a lane of its own. ---------

struct Pending {
  CallInfo call;
  std::int64_t issue_local = 0;
  std::int64_t id = 0;
  int lane = 0;
  int thread = 0;  // the issuing thread
  bool is_recv = false;
  MPI_Comm comm = MPI_COMM_NULL;  // to translate the source a receive's status names
};

// Keyed by handle, but MPI recycles a handle as soon as it frees the request, and with several
// threads another thread's new request can get it before our completion code looks it up. So a
// handle may map to several entries; lookups prefer the calling thread's own.
std::mutex g_requests_mu;
std::unordered_multimap<MPI_Request, Pending>* g_requests = nullptr;  // made at init, never freed
std::vector<char>* g_lanes = nullptr;
std::int64_t g_next_request = 0;

int take_lane_locked() {
  auto& lanes = *g_lanes;
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    if (lanes[i] == 0) {
      lanes[i] = 1;
      return static_cast<int>(i);
    }
  }
  lanes.push_back(1);
  return static_cast<int>(lanes.size() - 1);
}

// The entry for `request`, the calling thread's if it has one; end() if none.
std::unordered_multimap<MPI_Request, Pending>::iterator find_locked(MPI_Request request,
                                                                    int thread) {
  auto [first, last] = g_requests->equal_range(request);
  for (auto it = first; it != last; ++it) {
    if (it->second.thread == thread) return it;
  }
  return first == last ? g_requests->end() : first;
}

void erase_locked(std::unordered_multimap<MPI_Request, Pending>::iterator it) {
  (*g_lanes)[static_cast<std::size_t>(it->second.lane)] = 0;
  g_requests->erase(it);
}

void track(MPI_Request request, const CallInfo& call, std::int64_t issue_local, bool is_recv,
           MPI_Comm comm) {
  if (request == MPI_REQUEST_NULL) return;
  try {
    int thread = thread_index();
    std::lock_guard<std::mutex> lock(g_requests_mu);
    // This thread's entry for the same handle completed behind our back (e.g. a persistent or
    // freed request): drop it.
    auto old = find_locked(request, thread);
    if (old != g_requests->end() && old->second.thread == thread) erase_locked(old);
    g_requests->emplace(request, Pending{call, issue_local, g_next_request++, take_lane_locked(),
                                         thread, is_recv, comm});
  } catch (...) {
  }
}

bool untrack(MPI_Request request, Pending& out) {
  if (request == MPI_REQUEST_NULL) return false;
  try {
    int thread = thread_index();
    std::lock_guard<std::mutex> lock(g_requests_mu);
    auto it = find_locked(request, thread);
    if (it == g_requests->end()) return false;
    out = it->second;
    erase_locked(it);
    return true;
  } catch (...) {
    return false;
  }
}

int world_rank(MPI_Comm comm, int rank);

// Records the span of a tracked request that `by` saw complete; returns its bytes.
std::int64_t complete(Recorder* rec, MPI_Request before, const MPI_Status* status,
                      std::int64_t end_local, const char* by) {
  Pending p;
  if (!untrack(before, p)) return 0;
  if (p.is_recv && status != nullptr) {
    int n = 0;
    PMPI_Get_count(status, MPI_BYTE, &n);
    if (n != MPI_UNDEFINED) p.call.bytes = n;
    p.call.peer = world_rank(p.comm, status->MPI_SOURCE);
    p.call.tag = status->MPI_TAG;
  }
  rec->record_async(p.call, p.issue_local, end_local, p.lane, p.id, by);
  return p.call.bytes;
}

// Scratch copies of request arrays for the *all/*any/*some calls (the call overwrites them).
thread_local std::vector<MPI_Request> t_before;
thread_local std::vector<MPI_Status> t_statuses;

// Out of memory leaves MPI_STATUSES_IGNORE in place: receives then keep their posted size.
MPI_Status* statuses_for(int count, MPI_Status* given) {
  if (given != MPI_STATUSES_IGNORE) return given;
  try {
    if (t_statuses.size() < static_cast<std::size_t>(count)) t_statuses.resize(count);
  } catch (...) {
    return given;
  }
  return t_statuses.data();
}

// --- Sizes -----------------------------------------------------------------------------------

std::int64_t type_bytes(std::int64_t count, MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL) return 0;
  int size = 0;
  PMPI_Type_size(type, &size);
  return count * size;
}

int comm_size(MPI_Comm comm) {
  int n = 0;
  PMPI_Comm_size(comm, &n);
  return n;
}

std::int64_t sum(const int* counts, int n) {
  std::int64_t s = 0;
  for (int i = 0; i < n; ++i) s += counts[i];
  return s;
}

CallInfo call(const char* name, const char* collective, std::int64_t bytes, MPI_Comm comm) {
  CallInfo c;
  c.name = name;
  c.collective = collective;
  c.bytes = bytes;
  c.comm_size = comm_size(comm);
  return c;
}

// peer/root are recorded as world ranks (docs/tracing.md): a sub-communicator's translation
// table is computed once and dropped at MPI_Comm_free, before MPI can reuse the handle.
std::mutex g_comms_mu;
std::unordered_map<MPI_Comm, std::vector<int>>* g_comms = nullptr;  // made at init, never freed

std::vector<int> translation_to_world(MPI_Comm comm) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  MPI_Group group;
  MPI_Group world;
  // On an intercommunicator, point-to-point ranks name the remote group.
  if (inter != 0) {
    PMPI_Comm_remote_group(comm, &group);
  } else {
    PMPI_Comm_group(comm, &group);
  }
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  int n = 0;
  PMPI_Group_size(group, &n);
  std::vector<int> in(static_cast<std::size_t>(n));
  std::vector<int> out(static_cast<std::size_t>(n), MPI_UNDEFINED);
  for (int i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = i;
  PMPI_Group_translate_ranks(group, n, in.data(), world, out.data());
  PMPI_Group_free(&group);
  PMPI_Group_free(&world);
  return out;
}

// Special values (MPI_ANY_SOURCE, MPI_PROC_NULL, MPI_ROOT) and ranks outside MPI_COMM_WORLD
// (spawned processes) stay as they are.
int world_rank(MPI_Comm comm, int rank) {
  if (rank < 0 || comm == MPI_COMM_WORLD || g_comms == nullptr) return rank;
  try {
    std::lock_guard<std::mutex> lock(g_comms_mu);
    auto it = g_comms->find(comm);
    if (it == g_comms->end()) it = g_comms->emplace(comm, translation_to_world(comm)).first;
    const auto& table = it->second;
    if (static_cast<std::size_t>(rank) >= table.size()) return rank;
    int w = table[static_cast<std::size_t>(rank)];
    return w == MPI_UNDEFINED ? rank : w;
  } catch (...) {
    return rank;
  }
}

void forget_comm(MPI_Comm comm) {
  if (g_comms == nullptr) return;
  try {
    std::lock_guard<std::mutex> lock(g_comms_mu);
    g_comms->erase(comm);
  } catch (...) {
  }
}

CallInfo rooted(CallInfo c, int root, MPI_Comm comm) {
  c.root = world_rank(comm, root);
  return c;
}

CallInfo p2p(CallInfo c, int peer, int tag, MPI_Comm comm) {
  c.peer = world_rank(comm, peer);
  c.tag = tag;
  return c;
}

// --- Lifecycle --------------------------------------------------------------------------------

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

void write_pending(Recorder* rec, std::int64_t end_local) {
  std::lock_guard<std::mutex> lock(g_requests_mu);
  for (const auto& [request, p] : *g_requests) {
    rec->record_async(p.call, p.issue_local, end_local, p.lane, p.id, "");
  }
  g_requests->clear();
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
    config.path = std::string(dir) + "/rank-" + std::to_string(rank) + ".trace.json";
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    config.host = host;
    config.os_pid = getpid();
    auto rec = Recorder::open(config);
    if (!rec.ok()) {
      warn(rank, rec.error().message + "; this rank is not traced");
      return;
    }
    g_requests = new std::unordered_multimap<MPI_Request, Pending>();
    g_lanes = new std::vector<char>();
    g_comms = new std::unordered_map<MPI_Comm, std::vector<int>>();
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

Recorder* active() { return g_recorder.load(std::memory_order_acquire); }

}  // namespace
}  // namespace dagsgd::mpitrace

using dagsgd::mpitrace::active;
using dagsgd::mpitrace::CallInfo;
using dagsgd::mpitrace::Recorder;
using dagsgd::runtime::now_ns;
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

// A blocking call: time it, then describe it (after the call, so a bad argument is reported by
// MPI itself and the description's own cost stays outside the span).
#define DAGSGD_BLOCKING(invoke, describe)                 \
  Recorder* rec = active();                               \
  if (rec == nullptr) return invoke;                      \
  std::int64_t t0 = now_ns();                             \
  int rc = invoke;                                        \
  std::int64_t t1 = now_ns();                             \
  rec->record_call(describe, t0, t1, mt::thread_index()); \
  return rc

// A non-blocking call: its span opens at issue and closes in the Wait/Test that completes it.
#define DAGSGD_NONBLOCKING(invoke, describe, is_recv)                      \
  Recorder* rec = active();                                                \
  if (rec == nullptr) return invoke;                                       \
  std::int64_t t0 = now_ns();                                              \
  int rc = invoke;                                                         \
  if (rc == MPI_SUCCESS) mt::track(*request, describe, t0, is_recv, comm); \
  return rc

// --- Collectives -------------------------------------------------------------------------------

DAGSGD_EXPORT int MPI_Barrier(MPI_Comm comm) {
  DAGSGD_BLOCKING(PMPI_Barrier(comm), mt::call("MPI_Barrier", "barrier", 0, comm));
}

DAGSGD_EXPORT int MPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  DAGSGD_NONBLOCKING(PMPI_Ibarrier(comm, request), mt::call("MPI_Ibarrier", "barrier", 0, comm),
                     false);
}

DAGSGD_EXPORT int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  DAGSGD_BLOCKING(PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm),
                  mt::call("MPI_Allreduce", "allreduce", mt::type_bytes(count, datatype), comm));
}

DAGSGD_EXPORT int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                 MPI_Request* request) {
  DAGSGD_NONBLOCKING(PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request),
                     mt::call("MPI_Iallreduce", "allreduce", mt::type_bytes(count, datatype), comm),
                     false);
}

DAGSGD_EXPORT int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, int root, MPI_Comm comm) {
  DAGSGD_BLOCKING(
      PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm),
      mt::rooted(mt::call("MPI_Reduce", "reduce", mt::type_bytes(count, datatype), comm), root,
                 comm));
}

DAGSGD_EXPORT int MPI_Ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                              MPI_Op op, int root, MPI_Comm comm, MPI_Request* request) {
  DAGSGD_NONBLOCKING(
      PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request),
      mt::rooted(mt::call("MPI_Ireduce", "reduce", mt::type_bytes(count, datatype), comm), root,
                 comm),
      false);
}

DAGSGD_EXPORT int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root,
                            MPI_Comm comm) {
  DAGSGD_BLOCKING(PMPI_Bcast(buffer, count, datatype, root, comm),
                  mt::rooted(mt::call("MPI_Bcast", "bcast", mt::type_bytes(count, datatype), comm),
                             root, comm));
}

DAGSGD_EXPORT int MPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root,
                             MPI_Comm comm, MPI_Request* request) {
  DAGSGD_NONBLOCKING(
      PMPI_Ibcast(buffer, count, datatype, root, comm, request),
      mt::rooted(mt::call("MPI_Ibcast", "bcast", mt::type_bytes(count, datatype), comm), root,
                 comm),
      false);
}

// Gathers and all-to-alls count the whole receive buffer (docs/tracing.md, "Bytes").
DAGSGD_EXPORT int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                void* recvbuf, int recvcount, MPI_Datatype recvtype,
                                MPI_Comm comm) {
  DAGSGD_BLOCKING(
      PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),
      mt::call("MPI_Allgather", "allgather",
               mt::type_bytes(std::int64_t{recvcount} * mt::comm_size(comm), recvtype), comm));
}

DAGSGD_EXPORT int MPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Request* request) {
  DAGSGD_NONBLOCKING(
      PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request),
      mt::call("MPI_Iallgather", "allgather",
               mt::type_bytes(std::int64_t{recvcount} * mt::comm_size(comm), recvtype), comm),
      false);
}

DAGSGD_EXPORT int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void* recvbuf, const int recvcounts[], const int displs[],
                                 MPI_Datatype recvtype, MPI_Comm comm) {
  DAGSGD_BLOCKING(
      PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm),
      mt::call("MPI_Allgatherv", "allgather",
               mt::type_bytes(mt::sum(recvcounts, mt::comm_size(comm)), recvtype), comm));
}

DAGSGD_EXPORT int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                               void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  DAGSGD_BLOCKING(
      PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),
      mt::call("MPI_Alltoall", "alltoall",
               mt::type_bytes(std::int64_t{recvcount} * mt::comm_size(comm), recvtype), comm));
}

DAGSGD_EXPORT int MPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                MPI_Request* request) {
  DAGSGD_NONBLOCKING(
      PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request),
      mt::call("MPI_Ialltoall", "alltoall",
               mt::type_bytes(std::int64_t{recvcount} * mt::comm_size(comm), recvtype), comm),
      false);
}

DAGSGD_EXPORT int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  DAGSGD_BLOCKING(
      PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm),
      mt::call("MPI_Reduce_scatter", "reduce_scatter",
               mt::type_bytes(mt::sum(recvcounts, mt::comm_size(comm)), datatype), comm));
}

DAGSGD_EXPORT int MPI_Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                      MPI_Request* request) {
  DAGSGD_NONBLOCKING(
      PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, request),
      mt::call("MPI_Ireduce_scatter", "reduce_scatter",
               mt::type_bytes(mt::sum(recvcounts, mt::comm_size(comm)), datatype), comm),
      false);
}

DAGSGD_EXPORT int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  DAGSGD_BLOCKING(
      PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm),
      mt::call("MPI_Reduce_scatter_block", "reduce_scatter",
               mt::type_bytes(std::int64_t{recvcount} * mt::comm_size(comm), datatype), comm));
}

DAGSGD_EXPORT int MPI_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void* recvbuf, const int recvcounts[], const int displs[],
                                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  DAGSGD_NONBLOCKING(
      PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                       request),
      mt::call("MPI_Iallgatherv", "allgather",
               mt::type_bytes(mt::sum(recvcounts, mt::comm_size(comm)), recvtype), comm),
      false);
}

DAGSGD_EXPORT int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  DAGSGD_BLOCKING(
      PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                     comm),
      mt::call("MPI_Alltoallv", "alltoall",
               mt::type_bytes(mt::sum(recvcounts, mt::comm_size(comm)), recvtype), comm));
}

DAGSGD_EXPORT int MPI_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                 const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Request* request) {
  DAGSGD_NONBLOCKING(
      PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                      recvtype, comm, request),
      mt::call("MPI_Ialltoallv", "alltoall",
               mt::type_bytes(mt::sum(recvcounts, mt::comm_size(comm)), recvtype), comm),
      false);
}

// Gather and scatter count the whole gathered (scattered) vector, taken from the side every rank
// has: the per-rank block times comm_size (the root's own block when it passes MPI_IN_PLACE).
DAGSGD_EXPORT int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                             void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                             MPI_Comm comm) {
  DAGSGD_BLOCKING(
      PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm),
      mt::rooted(
          mt::call("MPI_Gather", "gather",
                   sendbuf == MPI_IN_PLACE
                       ? mt::type_bytes(std::int64_t{recvcount} * mt::comm_size(comm), recvtype)
                       : mt::type_bytes(std::int64_t{sendcount} * mt::comm_size(comm), sendtype),
                   comm),
          root, comm));
}

DAGSGD_EXPORT int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                              void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                              MPI_Comm comm) {
  DAGSGD_BLOCKING(
      PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm),
      mt::rooted(
          mt::call("MPI_Scatter", "scatter",
                   recvbuf == MPI_IN_PLACE
                       ? mt::type_bytes(std::int64_t{sendcount} * mt::comm_size(comm), sendtype)
                       : mt::type_bytes(std::int64_t{recvcount} * mt::comm_size(comm), recvtype),
                   comm),
          root, comm));
}

// --- Point-to-point ----------------------------------------------------------------------------

DAGSGD_EXPORT int MPI_Send(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                           MPI_Comm comm) {
  DAGSGD_BLOCKING(PMPI_Send(buf, count, datatype, dest, tag, comm),
                  mt::p2p(mt::call("MPI_Send", "send", mt::type_bytes(count, datatype), comm), dest,
                          tag, comm));
}

DAGSGD_EXPORT int MPI_Isend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag,
                            MPI_Comm comm, MPI_Request* request) {
  DAGSGD_NONBLOCKING(PMPI_Isend(buf, count, datatype, dest, tag, comm, request),
                     mt::p2p(mt::call("MPI_Isend", "send", mt::type_bytes(count, datatype), comm),
                             dest, tag, comm),
                     false);
}

// A receive reports what arrived (from its status), not the posted buffer size.
DAGSGD_EXPORT int MPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag,
                           MPI_Comm comm, MPI_Status* status) {
  Recorder* rec = active();
  if (rec == nullptr) return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  std::int64_t t0 = now_ns();
  int rc = PMPI_Recv(buf, count, datatype, source, tag, comm, st);
  std::int64_t t1 = now_ns();
  int n = 0;
  PMPI_Get_count(st, MPI_BYTE, &n);
  CallInfo c = mt::p2p(mt::call("MPI_Recv", "recv", n == MPI_UNDEFINED ? 0 : n, comm),
                       st->MPI_SOURCE, st->MPI_TAG, comm);
  rec->record_call(c, t0, t1, mt::thread_index());
  return rc;
}

DAGSGD_EXPORT int MPI_Irecv(void* buf, int count, MPI_Datatype datatype, int source, int tag,
                            MPI_Comm comm, MPI_Request* request) {
  DAGSGD_NONBLOCKING(PMPI_Irecv(buf, count, datatype, source, tag, comm, request),
                     mt::p2p(mt::call("MPI_Irecv", "recv", mt::type_bytes(count, datatype), comm),
                             source, tag, comm),
                     true);
}

// --- Completion --------------------------------------------------------------------------------

namespace dagsgd::mpitrace {
namespace {

CallInfo completion(const char* name, const char* what, std::int64_t bytes) {
  CallInfo c;
  c.name = name;
  c.collective = what;
  c.bytes = bytes;
  return c;
}

// For the array calls: every request non-null before and null after has completed; its status
// sits at status_index(i) (or nowhere, -1).
template <class StatusIndex>
std::int64_t complete_array(Recorder* rec, int count, const MPI_Request* after,
                            MPI_Status* statuses, StatusIndex status_index, std::int64_t t1,
                            const char* by, std::int64_t& completed) {
  std::int64_t bytes = 0;
  for (int i = 0; i < count; ++i) {
    MPI_Request before = t_before[static_cast<std::size_t>(i)];
    if (before == MPI_REQUEST_NULL || after[i] != MPI_REQUEST_NULL) continue;
    int s = statuses == MPI_STATUSES_IGNORE ? -1 : status_index(i);
    bytes += complete(rec, before, s >= 0 ? &statuses[s] : nullptr, t1, by);
    ++completed;
  }
  return bytes;
}

// Returns false (and the call goes untraced) when out of memory.
bool save_requests(int count, const MPI_Request* requests) {
  try {
    t_before.assign(requests, requests + (count > 0 ? count : 0));
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace
}  // namespace dagsgd::mpitrace

DAGSGD_EXPORT int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  Recorder* rec = active();
  if (rec == nullptr) return PMPI_Wait(request, status);
  MPI_Request before = *request;
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  std::int64_t t0 = now_ns();
  int rc = PMPI_Wait(request, st);
  std::int64_t t1 = now_ns();
  std::int64_t completed = 0;
  std::int64_t bytes = 0;
  if (before != MPI_REQUEST_NULL && *request == MPI_REQUEST_NULL) {
    bytes = mt::complete(rec, before, st, t1, "MPI_Wait");
    completed = 1;
  }
  rec->record_call(mt::completion("MPI_Wait", "wait", bytes), t0, t1, mt::thread_index(),
                   completed);
  return rc;
}

// Test calls that complete nothing are not recorded: polling loops would flood the trace.
DAGSGD_EXPORT int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  Recorder* rec = active();
  if (rec == nullptr) return PMPI_Test(request, flag, status);
  MPI_Request before = *request;
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  std::int64_t t0 = now_ns();
  int rc = PMPI_Test(request, flag, st);
  std::int64_t t1 = now_ns();
  if (*flag != 0 && before != MPI_REQUEST_NULL && *request == MPI_REQUEST_NULL) {
    std::int64_t bytes = mt::complete(rec, before, st, t1, "MPI_Test");
    rec->record_call(mt::completion("MPI_Test", "test", bytes), t0, t1, mt::thread_index(), 1);
  }
  return rc;
}

DAGSGD_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  Recorder* rec = active();
  if (rec == nullptr || !mt::save_requests(count, requests)) {
    return PMPI_Waitall(count, requests, statuses);
  }
  MPI_Status* st = mt::statuses_for(count, statuses);
  std::int64_t t0 = now_ns();
  int rc = PMPI_Waitall(count, requests, st);
  std::int64_t t1 = now_ns();
  std::int64_t completed = 0;
  std::int64_t bytes = mt::complete_array(
      rec, count, requests, st, [](int i) { return i; }, t1, "MPI_Waitall", completed);
  rec->record_call(mt::completion("MPI_Waitall", "wait", bytes), t0, t1, mt::thread_index(),
                   completed);
  return rc;
}

DAGSGD_EXPORT int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  Recorder* rec = active();
  if (rec == nullptr || !mt::save_requests(count, requests)) {
    return PMPI_Testall(count, requests, flag, statuses);
  }
  MPI_Status* st = mt::statuses_for(count, statuses);
  std::int64_t t0 = now_ns();
  int rc = PMPI_Testall(count, requests, flag, st);
  std::int64_t t1 = now_ns();
  if (*flag != 0) {
    std::int64_t completed = 0;
    std::int64_t bytes = mt::complete_array(
        rec, count, requests, st, [](int i) { return i; }, t1, "MPI_Testall", completed);
    rec->record_call(mt::completion("MPI_Testall", "test", bytes), t0, t1, mt::thread_index(),
                     completed);
  }
  return rc;
}

DAGSGD_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  Recorder* rec = active();
  if (rec == nullptr || !mt::save_requests(count, requests)) {
    return PMPI_Waitany(count, requests, index, status);
  }
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  std::int64_t t0 = now_ns();
  int rc = PMPI_Waitany(count, requests, index, st);
  std::int64_t t1 = now_ns();
  std::int64_t completed = 0;
  int done = *index;
  std::int64_t bytes = mt::complete_array(
      rec, count, requests, st, [done](int i) { return i == done ? 0 : -1; }, t1, "MPI_Waitany",
      completed);
  rec->record_call(mt::completion("MPI_Waitany", "wait", bytes), t0, t1, mt::thread_index(),
                   completed);
  return rc;
}

DAGSGD_EXPORT int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag,
                              MPI_Status* status) {
  Recorder* rec = active();
  if (rec == nullptr || !mt::save_requests(count, requests)) {
    return PMPI_Testany(count, requests, index, flag, status);
  }
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  std::int64_t t0 = now_ns();
  int rc = PMPI_Testany(count, requests, index, flag, st);
  std::int64_t t1 = now_ns();
  if (*flag != 0 && *index != MPI_UNDEFINED) {
    std::int64_t completed = 0;
    int done = *index;
    std::int64_t bytes = mt::complete_array(
        rec, count, requests, st, [done](int i) { return i == done ? 0 : -1; }, t1, "MPI_Testany",
        completed);
    rec->record_call(mt::completion("MPI_Testany", "test", bytes), t0, t1, mt::thread_index(),
                     completed);
  }
  return rc;
}

namespace dagsgd::mpitrace {
namespace {

// Waitsome/Testsome place the status of indices[k] at statuses[k].
template <class Call>
int some(const char* name, const char* what, int incount, MPI_Request requests[], int* outcount,
         int indices[], MPI_Status statuses[], Call invoke) {
  Recorder* rec = active();
  if (rec == nullptr || !save_requests(incount, requests)) return invoke(statuses);
  MPI_Status* st = statuses_for(incount, statuses);
  std::int64_t t0 = now_ns();
  int rc = invoke(st);
  std::int64_t t1 = now_ns();
  if (*outcount == MPI_UNDEFINED || *outcount == 0) {
    if (what[0] == 'w') rec->record_call(completion(name, what, 0), t0, t1, thread_index(), 0);
    return rc;
  }
  int n = *outcount;
  std::int64_t completed = 0;
  std::int64_t bytes = complete_array(
      rec, incount, requests, st,
      [indices, n](int i) {
        for (int k = 0; k < n; ++k) {
          if (indices[k] == i) return k;
        }
        return -1;
      },
      t1, name, completed);
  rec->record_call(completion(name, what, bytes), t0, t1, thread_index(), completed);
  return rc;
}

}  // namespace
}  // namespace dagsgd::mpitrace

DAGSGD_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                               MPI_Status statuses[]) {
  return mt::some(
      "MPI_Waitsome", "wait", incount, requests, outcount, indices, statuses,
      [&](MPI_Status* st) { return PMPI_Waitsome(incount, requests, outcount, indices, st); });
}

DAGSGD_EXPORT int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                               MPI_Status statuses[]) {
  return mt::some(
      "MPI_Testsome", "test", incount, requests, outcount, indices, statuses,
      [&](MPI_Status* st) { return PMPI_Testsome(incount, requests, outcount, indices, st); });
}

// A freed request completes unseen; forget it so a reused handle is not mistaken for it.
DAGSGD_EXPORT int MPI_Request_free(MPI_Request* request) {
  if (active() != nullptr && request != nullptr) {
    mt::Pending p;
    (void)mt::untrack(*request, p);
  }
  return PMPI_Request_free(request);
}

DAGSGD_EXPORT int MPI_Comm_free(MPI_Comm* comm) {
  if (comm != nullptr) mt::forget_comm(*comm);
  return PMPI_Comm_free(comm);
}

// One span for both halves: bytes and peer describe the send, recv_bytes and source the receive.
DAGSGD_EXPORT int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                               int sendtag, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                               int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  Recorder* rec = active();
  if (rec == nullptr) {
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                         source, recvtag, comm, status);
  }
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  std::int64_t t0 = now_ns();
  int rc = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                         source, recvtag, comm, st);
  std::int64_t t1 = now_ns();
  int n = 0;
  PMPI_Get_count(st, MPI_BYTE, &n);
  CallInfo c =
      mt::p2p(mt::call("MPI_Sendrecv", "sendrecv", mt::type_bytes(sendcount, sendtype), comm), dest,
              sendtag, comm);
  c.source = mt::world_rank(comm, st->MPI_SOURCE);
  c.recv_bytes = n == MPI_UNDEFINED ? 0 : n;
  rec->record_call(c, t0, t1, mt::thread_index());
  return rc;
}
