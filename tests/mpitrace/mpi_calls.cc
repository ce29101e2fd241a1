// A small MPI program that makes every call the tracer wraps, with sizes a test can predict
// (tests/mpitrace/mpirun_test.cc); it can kill one of its ranks midway (--kill-rank R
// --kill-after ITER [--kill-signal N], default SIGKILL) or skip MPI_Finalize (--finalize 0);
// --subcomm 1 adds calls on a sub-communicator whose ranks run opposite to the world's.
#include <mpi.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iterations = 3;
  int kill_rank = -1;
  int kill_after = 0;
  int kill_signal = SIGKILL;
  bool finalize = true;
  bool subcomm = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--kill-rank") == 0) kill_rank = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--kill-after") == 0) kill_after = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--kill-signal") == 0) kill_signal = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--finalize") == 0) finalize = std::atoi(argv[i + 1]) != 0;
    if (std::strcmp(argv[i], "--subcomm") == 0) subcomm = std::atoi(argv[i + 1]) != 0;
  }
  const int next = (rank + 1) % size;
  const int prev = (rank + size - 1) % size;
  std::vector<double> d(256, 1.0), d2(256);
  std::vector<int> n(256, 1), n2(256);
  std::vector<char> c(256, 'x');
  std::vector<int> counts(static_cast<std::size_t>(size), 4);
  for (int it = 0; it < iterations; ++it) {
    if (rank == kill_rank && it == kill_after) raise(kill_signal);
    MPI_Allreduce(d.data(), d2.data(), 100, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);     // 800 B
    MPI_Reduce(d.data(), d2.data(), 3, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);        // 12 B
    MPI_Bcast(c.data(), 7, MPI_CHAR, size - 1, MPI_COMM_WORLD);                       // 7 B
    MPI_Allgather(n.data(), 2, MPI_INT, n2.data(), 2, MPI_INT, MPI_COMM_WORLD);       // 8*size
    MPI_Alltoall(d.data(), 1, MPI_DOUBLE, d2.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);  // 8*size
    MPI_Reduce_scatter(n.data(), n2.data(), counts.data(), MPI_INT, MPI_SUM,
                       MPI_COMM_WORLD);  // 16*size
    MPI_Barrier(MPI_COMM_WORLD);

    // Blocking ring: 32 B each way, received from any source.
    if (rank % 2 == 0) {
      MPI_Send(c.data(), 32, MPI_CHAR, next, 5, MPI_COMM_WORLD);
      MPI_Recv(c.data() + 64, 64, MPI_CHAR, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Status st;
      MPI_Recv(c.data() + 64, 64, MPI_CHAR, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st);
      MPI_Send(c.data(), 32, MPI_CHAR, next, 5, MPI_COMM_WORLD);
    }

    // Non-blocking ring: 64 B, completed by Waitall.
    MPI_Request r[2];
    MPI_Irecv(n2.data(), 16, MPI_INT, prev, 6, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(n.data(), 16, MPI_INT, next, 6, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);

    // Iallreduce 40 B by Wait; Ibcast 20 B by a Test loop; Iallgather by Waitany; Ibarrier by
    // Testall.
    MPI_Request a;
    MPI_Iallreduce(n.data(), n2.data(), 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &a);
    MPI_Wait(&a, MPI_STATUS_IGNORE);
    MPI_Request b;
    MPI_Ibcast(n.data(), 5, MPI_INT, 0, MPI_COMM_WORLD, &b);
    int flag = 0;
    while (flag == 0) MPI_Test(&b, &flag, MPI_STATUS_IGNORE);
    MPI_Request g;
    MPI_Iallgather(n.data(), 1, MPI_INT, n2.data(), 1, MPI_INT, MPI_COMM_WORLD, &g);
    int index = -1;
    MPI_Waitany(1, &g, &index, MPI_STATUS_IGNORE);
    MPI_Request bar;
    MPI_Ibarrier(MPI_COMM_WORLD, &bar);
    flag = 0;
    while (flag == 0) MPI_Testall(1, &bar, &flag, MPI_STATUSES_IGNORE);

    // The v-forms, gather/scatter and sendrecv.
    MPI_Gather(n.data(), 3, MPI_INT, n2.data(), 3, MPI_INT, 1 % size, MPI_COMM_WORLD);  // 12*size
    MPI_Scatter(d.data(), 2, MPI_DOUBLE, d2.data(), 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);  // 16*size
    std::vector<int> twos(static_cast<std::size_t>(size), 2);
    std::vector<int> displs(static_cast<std::size_t>(size));
    for (int p = 0; p < size; ++p) displs[static_cast<std::size_t>(p)] = 2 * p;
    MPI_Alltoallv(n.data(), twos.data(), displs.data(), MPI_INT, n2.data(), twos.data(),
                  displs.data(), MPI_INT, MPI_COMM_WORLD);  // 8*size
    MPI_Request v;
    MPI_Ialltoallv(n.data(), twos.data(), displs.data(), MPI_INT, n2.data(), twos.data(),
                   displs.data(), MPI_INT, MPI_COMM_WORLD, &v);  // 8*size, by Waitsome
    int outcount = 0;
    int indices[1];
    MPI_Waitsome(1, &v, &outcount, indices, MPI_STATUSES_IGNORE);
    MPI_Request gv;
    MPI_Iallgatherv(n.data(), 2, MPI_INT, n2.data(), twos.data(), displs.data(), MPI_INT,
                    MPI_COMM_WORLD, &gv);  // 8*size, by Testany
    flag = 0;
    while (flag == 0) MPI_Testany(1, &gv, &index, &flag, MPI_STATUS_IGNORE);
    MPI_Sendrecv(c.data(), 24, MPI_CHAR, next, 8, c.data() + 160, 64, MPI_CHAR, MPI_ANY_SOURCE, 8,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);  // 24 B each way
  }
  if (subcomm) {
    // Ranks reversed: sub rank s is world rank size-1-s, so the tracer must translate.
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &rev);
    const int sub = size - 1 - rank;
    MPI_Bcast(c.data(), 3, MPI_CHAR, 0, rev);  // root: world rank size-1
    MPI_Request r[2];
    MPI_Irecv(c.data() + 128, 8, MPI_CHAR, MPI_ANY_SOURCE, 7, rev, &r[0]);
    MPI_Isend(c.data(), 8, MPI_CHAR, (sub + 1) % size, 7, rev, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    MPI_Comm_free(&rev);
  }
  // Without MPI_Finalize, exit() still closes the traces (Open MPI then reports the job as failed).
  if (finalize) MPI_Finalize();
  return 0;
}
