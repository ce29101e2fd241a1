// Internals the PMPI wrapper files of libdagsgd-mpitrace.so share: the active recorder, request
// and communicator bookkeeping, call descriptions, and the wrapper macros.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "dagsgd/mpitrace/recorder.h"
#include "dagsgd/runtime/clock_sync.h"

#define DAGSGD_EXPORT extern "C" __attribute__((visibility("default")))

namespace dagsgd::mpitrace {

using runtime::now_ns;

// The recorder while tracing, else null: every wrapper then costs one load and a branch.
Recorder* active();
// A small index per calling thread (its MPI-calls track).
int thread_index();

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

void init_tracking();
void track(MPI_Request request, const CallInfo& call, std::int64_t issue_local, bool is_recv,
           MPI_Comm comm);
bool untrack(MPI_Request request, Pending& out);
// Records the span of a tracked request that `by` saw complete; returns its bytes.
std::int64_t complete(Recorder* rec, MPI_Request before, const MPI_Status* status,
                      std::int64_t end_local, const char* by);
// Records every request still pending as ending at `end_local` (the program is ending).
void write_pending(Recorder* rec, std::int64_t end_local);

// --- Sizes and descriptions -------------------------------------------------------------------

std::int64_t type_bytes(std::int64_t count, MPI_Datatype type);
int comm_size(MPI_Comm comm);
// Bytes of `count` elements from every rank of `comm` (gathers, all-to-alls).
std::int64_t block_per_rank(int count, MPI_Datatype type, MPI_Comm comm);
// Bytes of counts[0..comm size) elements (the v-variants).
std::int64_t block_sum(const int* counts, MPI_Datatype type, MPI_Comm comm);
CallInfo call(const char* name, const char* collective, std::int64_t bytes, MPI_Comm comm);
// A rank of `comm` as a world rank (docs/tracing.md); special values stay as they are.
int world_rank(MPI_Comm comm, int rank);
void forget_comm(MPI_Comm comm);
CallInfo rooted(CallInfo c, int root, MPI_Comm comm);
CallInfo p2p(CallInfo c, int peer, int tag, MPI_Comm comm);

// --- Lifecycle --------------------------------------------------------------------------------

void start_tracing();
void stop_tracing();

}  // namespace dagsgd::mpitrace

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
