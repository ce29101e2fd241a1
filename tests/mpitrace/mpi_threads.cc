// MPI_THREAD_MULTIPLE traffic for the tracer's tests: 4 threads per rank, each exchanging
// --iterations Isend/Irecv pairs with the partner rank (rank ^ 1) and completing them by Waitall.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (provided != MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "mpi_threads: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  int iterations = 1000;
  if (argc > 2 && std::strcmp(argv[1], "--iterations") == 0) iterations = std::atoi(argv[2]);
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([rank, t, iterations] {
      std::vector<int> out(100, t);
      std::vector<int> in(100);
      for (int i = 0; i < iterations; ++i) {
        MPI_Request r[2];
        MPI_Irecv(in.data(), 100, MPI_INT, rank ^ 1, t, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(out.data(), 100, MPI_INT, rank ^ 1, t, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
      }
    });
  }
  for (auto& th : threads) th.join();
  MPI_Finalize();
  return 0;
}
