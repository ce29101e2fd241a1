// Request and communicator bookkeeping of the PMPI wrappers, and how calls are described.
#include <mutex>
#include <unordered_map>

#include "wrappers.h"

namespace dagsgd::mpitrace {

namespace {

// Keyed by handle, but MPI recycles a handle as soon as it frees the request, and with several
// threads another thread's new request can get it before our completion code looks it up. So a
// handle may map to several entries; lookups prefer the calling thread's own.
std::mutex g_requests_mu;
std::unordered_multimap<MPI_Request, Pending>* g_requests = nullptr;  // made at init, never freed
std::vector<char>* g_lanes = nullptr;
std::int64_t g_next_request = 0;

// peer/root are recorded as world ranks (docs/tracing.md): a sub-communicator's translation
// table is computed once and dropped at MPI_Comm_free, before MPI can reuse the handle.
std::mutex g_comms_mu;
std::unordered_map<MPI_Comm, std::vector<int>>* g_comms = nullptr;  // made at init, never freed

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

}  // namespace

void init_tracking() {
  g_requests = new std::unordered_multimap<MPI_Request, Pending>();
  g_lanes = new std::vector<char>();
  g_comms = new std::unordered_map<MPI_Comm, std::vector<int>>();
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

void write_pending(Recorder* rec, std::int64_t end_local) {
  std::lock_guard<std::mutex> lock(g_requests_mu);
  for (const auto& [request, p] : *g_requests) {
    rec->record_async(p.call, p.issue_local, end_local, p.lane, p.id, "");
  }
  g_requests->clear();
}

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

std::int64_t block_per_rank(int count, MPI_Datatype type, MPI_Comm comm) {
  return type_bytes(std::int64_t{count} * comm_size(comm), type);
}

std::int64_t block_sum(const int* counts, MPI_Datatype type, MPI_Comm comm) {
  std::int64_t s = 0;
  for (int i = 0, n = comm_size(comm); i < n; ++i) s += counts[i];
  return type_bytes(s, type);
}

CallInfo call(const char* name, const char* collective, std::int64_t bytes, MPI_Comm comm) {
  CallInfo c;
  c.name = name;
  c.collective = collective;
  c.bytes = bytes;
  c.comm_size = comm_size(comm);
  return c;
}

namespace {

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

}  // namespace

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

}  // namespace dagsgd::mpitrace
