// PMPI wrappers of the collectives, blocking and non-blocking (docs/tracing.md, "Bytes").
#include "wrappers.h"

using dagsgd::mpitrace::active;
using dagsgd::mpitrace::Recorder;
using dagsgd::runtime::now_ns;
namespace mt = dagsgd::mpitrace;

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
// MPI_Allgather and MPI_Alltoall take the same arguments: one macro writes the blocking and the
// non-blocking wrapper of each.
#define DAGSGD_BLOCK_COLLECTIVE(NAME, INAME, collective)                                          \
  DAGSGD_EXPORT int MPI_##NAME(const void* sendbuf, int sendcount, MPI_Datatype sendtype,         \
                               void* recvbuf, int recvcount, MPI_Datatype recvtype,               \
                               MPI_Comm comm) {                                                   \
    DAGSGD_BLOCKING(                                                                              \
        PMPI_##NAME(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),            \
        mt::call("MPI_" #NAME, collective, mt::block_per_rank(recvcount, recvtype, comm), comm)); \
  }                                                                                               \
  DAGSGD_EXPORT int MPI_##INAME(const void* sendbuf, int sendcount, MPI_Datatype sendtype,        \
                                void* recvbuf, int recvcount, MPI_Datatype recvtype,              \
                                MPI_Comm comm, MPI_Request* request) {                            \
    DAGSGD_NONBLOCKING(                                                                           \
        PMPI_##INAME(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request),  \
        mt::call("MPI_" #INAME, collective, mt::block_per_rank(recvcount, recvtype, comm), comm), \
        false);                                                                                   \
  }

DAGSGD_BLOCK_COLLECTIVE(Allgather, Iallgather, "allgather")
DAGSGD_BLOCK_COLLECTIVE(Alltoall, Ialltoall, "alltoall")

DAGSGD_EXPORT int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void* recvbuf, const int recvcounts[], const int displs[],
                                 MPI_Datatype recvtype, MPI_Comm comm) {
  DAGSGD_BLOCKING(
      PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm),
      mt::call("MPI_Allgatherv", "allgather", mt::block_sum(recvcounts, recvtype, comm), comm));
}

DAGSGD_EXPORT int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  DAGSGD_BLOCKING(PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm),
                  mt::call("MPI_Reduce_scatter", "reduce_scatter",
                           mt::block_sum(recvcounts, datatype, comm), comm));
}

DAGSGD_EXPORT int MPI_Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                      MPI_Request* request) {
  DAGSGD_NONBLOCKING(
      PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, request),
      mt::call("MPI_Ireduce_scatter", "reduce_scatter", mt::block_sum(recvcounts, datatype, comm),
               comm),
      false);
}

DAGSGD_EXPORT int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  DAGSGD_BLOCKING(PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm),
                  mt::call("MPI_Reduce_scatter_block", "reduce_scatter",
                           mt::block_per_rank(recvcount, datatype, comm), comm));
}

DAGSGD_EXPORT int MPI_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void* recvbuf, const int recvcounts[], const int displs[],
                                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  DAGSGD_NONBLOCKING(
      PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                       request),
      mt::call("MPI_Iallgatherv", "allgather", mt::block_sum(recvcounts, recvtype, comm), comm),
      false);
}

DAGSGD_EXPORT int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  DAGSGD_BLOCKING(
      PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                     comm),
      mt::call("MPI_Alltoallv", "alltoall", mt::block_sum(recvcounts, recvtype, comm), comm));
}

DAGSGD_EXPORT int MPI_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                 const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Request* request) {
  DAGSGD_NONBLOCKING(
      PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                      recvtype, comm, request),
      mt::call("MPI_Ialltoallv", "alltoall", mt::block_sum(recvcounts, recvtype, comm), comm),
      false);
}

// Gather and scatter count the whole gathered (scattered) vector, taken from the side every rank
// has: the per-rank block times comm_size (the root's own block when it passes MPI_IN_PLACE).
// They take the same arguments: one macro writes both wrappers, given how each counts `bytes`.
#define DAGSGD_ROOTED_VECTOR(NAME, collective, bytes)                                         \
  DAGSGD_EXPORT int MPI_##NAME(const void* sendbuf, int sendcount, MPI_Datatype sendtype,     \
                               void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, \
                               MPI_Comm comm) {                                               \
    DAGSGD_BLOCKING(                                                                          \
        PMPI_##NAME(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm),  \
        mt::rooted(mt::call("MPI_" #NAME, collective, bytes, comm), root, comm));             \
  }

DAGSGD_ROOTED_VECTOR(Gather, "gather",
                     sendbuf == MPI_IN_PLACE ? mt::block_per_rank(recvcount, recvtype, comm)
                                             : mt::block_per_rank(sendcount, sendtype, comm))
DAGSGD_ROOTED_VECTOR(Scatter, "scatter",
                     recvbuf == MPI_IN_PLACE ? mt::block_per_rank(sendcount, sendtype, comm)
                                             : mt::block_per_rank(recvcount, recvtype, comm))
