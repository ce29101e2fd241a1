// PMPI wrappers of point-to-point calls and of the Wait/Test family that completes requests.
#include <vector>

#include "wrappers.h"

using dagsgd::mpitrace::active;
using dagsgd::mpitrace::CallInfo;
using dagsgd::mpitrace::Recorder;
using dagsgd::runtime::now_ns;
namespace mt = dagsgd::mpitrace;

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

CallInfo completion(const char* name, const char* what, std::int64_t bytes) {
  CallInfo c;
  c.name = name;
  c.collective = what;
  c.bytes = bytes;
  return c;
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

// The calls that complete requests of an array (Wait/Test all/any/some). `invoke(st)` runs the
// PMPI call with statuses `st` (one status for *any, else an array); afterwards, every request
// non-null before and null after has completed, and its status sits at status_index(i) (-1:
// none). `record()` says whether the call is recorded: a Test that completes nothing is not, or
// polling loops would flood the trace.
template <class Invoke, class Record, class StatusIndex>
int complete_requests(const char* name, const char* what, int count, MPI_Request requests[],
                      MPI_Status* statuses, bool one_status, Invoke invoke, Record record,
                      StatusIndex status_index) {
  Recorder* rec = active();
  if (rec == nullptr || !save_requests(count, requests)) return invoke(statuses);
  MPI_Status local;
  MPI_Status* st = one_status ? (statuses == MPI_STATUS_IGNORE ? &local : statuses)
                              : statuses_for(count, statuses);
  std::int64_t t0 = now_ns();
  int rc = invoke(st);
  std::int64_t t1 = now_ns();
  if (!record()) return rc;
  std::int64_t bytes = 0;
  std::int64_t completed = 0;
  for (int i = 0; i < count; ++i) {
    MPI_Request before = t_before[static_cast<std::size_t>(i)];
    if (before == MPI_REQUEST_NULL || requests[i] != MPI_REQUEST_NULL) continue;
    int s = st == MPI_STATUSES_IGNORE ? -1 : status_index(i);
    bytes += complete(rec, before, s >= 0 ? &st[s] : nullptr, t1, name);
    ++completed;
  }
  rec->record_call(completion(name, what, bytes), t0, t1, thread_index(), completed);
  return rc;
}

int same_index(int i) { return i; }

// Where `i` stands in indices[0..n), or -1.
int position_of(int i, const int* indices, int n) {
  for (int k = 0; k < n; ++k) {
    if (indices[k] == i) return k;
  }
  return -1;
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
  return mt::complete_requests(
      "MPI_Waitall", "wait", count, requests, statuses, false,
      [&](MPI_Status* st) { return PMPI_Waitall(count, requests, st); }, [] { return true; },
      mt::same_index);
}

DAGSGD_EXPORT int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  return mt::complete_requests(
      "MPI_Testall", "test", count, requests, statuses, false,
      [&](MPI_Status* st) { return PMPI_Testall(count, requests, flag, st); },
      [&] { return *flag != 0; }, mt::same_index);
}

DAGSGD_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  return mt::complete_requests(
      "MPI_Waitany", "wait", count, requests, status, true,
      [&](MPI_Status* st) { return PMPI_Waitany(count, requests, index, st); }, [] { return true; },
      [&](int i) { return i == *index ? 0 : -1; });
}

DAGSGD_EXPORT int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag,
                              MPI_Status* status) {
  return mt::complete_requests(
      "MPI_Testany", "test", count, requests, status, true,
      [&](MPI_Status* st) { return PMPI_Testany(count, requests, index, flag, st); },
      [&] { return *flag != 0 && *index != MPI_UNDEFINED; },
      [&](int i) { return i == *index ? 0 : -1; });
}

// Waitsome/Testsome place the status of indices[k] at statuses[k]; a Waitsome that completes
// nothing (all requests null) is still a wait.
DAGSGD_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                               MPI_Status statuses[]) {
  return mt::complete_requests(
      "MPI_Waitsome", "wait", incount, requests, statuses, false,
      [&](MPI_Status* st) { return PMPI_Waitsome(incount, requests, outcount, indices, st); },
      [] { return true; }, [&](int i) { return mt::position_of(i, indices, *outcount); });
}

DAGSGD_EXPORT int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                               MPI_Status statuses[]) {
  return mt::complete_requests(
      "MPI_Testsome", "test", incount, requests, statuses, false,
      [&](MPI_Status* st) { return PMPI_Testsome(incount, requests, outcount, indices, st); },
      [&] { return *outcount != MPI_UNDEFINED && *outcount != 0; },
      [&](int i) { return mt::position_of(i, indices, *outcount); });
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
