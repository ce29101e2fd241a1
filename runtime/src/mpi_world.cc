// Error agreement, string gathers and placement over MPI_COMM_WORLD.
#include "mpi_world.h"

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <thread>

namespace dagsgd::runtime {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

namespace {

std::string broadcast_from(int root, const std::string& value) {
  std::string s = value;
  int len = static_cast<int>(s.size());
  MPI_Bcast(&len, 1, MPI_INT, root, MPI_COMM_WORLD);
  s.resize(static_cast<std::size_t>(len));
  MPI_Bcast(s.data(), len, MPI_CHAR, root, MPI_COMM_WORLD);
  return s;
}

}  // namespace

model::Expected<void> agree(const model::Expected<void>& mine) {
  const int rank = world_rank();
  const int size = world_size();
  int bad = mine.ok() ? size : rank;
  int first = size;
  MPI_Allreduce(&bad, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == size) return model::ok();
  std::string msg = broadcast_from(first, first == rank ? mine.error().message : std::string());
  if (first != 0) msg = "rank " + std::to_string(first) + ": " + msg;
  return model::Error{msg};
}

std::string broadcast_string(const std::string& value) { return broadcast_from(0, value); }

std::vector<std::string> gather_strings(const std::string& mine) {
  constexpr int kLen = 256;
  const int rank = world_rank();
  const int size = world_size();
  std::array<char, kLen> buf{};
  mine.copy(buf.data(), kLen - 1);
  std::vector<char> all(static_cast<std::size_t>(kLen * size), '\0');
  MPI_Gather(buf.data(), kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank == 0) {
    for (int r = 0; r < size; ++r) {
      out.emplace_back(all.data() + static_cast<std::ptrdiff_t>(r) * kLen);
    }
  }
  return out;
}

Placement gather_placement() {
  const int rank = world_rank();
  const int size = world_size();
  Placement p;
  std::array<char, MPI_MAX_PROCESSOR_NAME> name{};
  int len = 0;
  MPI_Get_processor_name(name.data(), &len);
  const std::string host(name.data(), static_cast<std::size_t>(len));
  p.hosts = gather_strings(host);
  // The boot id is the kernel's: network and UTS namespaces (the emulated cluster's hosts) share
  // it, other machines do not.
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  p.machines = gather_strings(boot_id.empty() ? host : boot_id);
  // The CPUs this rank may use; a machine's count is the union over its ranks, so ranks bound
  // to different cores count every core they have between them, and unbound ranks the
  // machine's.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) == 0) {
    CPU_ZERO(&set);
    const unsigned n = std::max(1U, std::thread::hardware_concurrency());
    for (unsigned c = 0; c < n && c < CPU_SETSIZE; ++c) CPU_SET(c, &set);
  }
  constexpr int kSetBytes = static_cast<int>(sizeof(cpu_set_t));
  std::vector<cpu_set_t> sets(rank == 0 ? static_cast<std::size_t>(size) : 0);
  MPI_Gather(&set, kSetBytes, MPI_BYTE, rank == 0 ? sets.data() : nullptr, kSetBytes, MPI_BYTE, 0,
             MPI_COMM_WORLD);
  std::map<std::string, cpu_set_t> machine_sets;
  for (std::size_t r = 0; r < sets.size(); ++r) {
    auto [it, fresh] = machine_sets.try_emplace(p.machines[r], sets[r]);
    if (!fresh) CPU_OR(&it->second, &it->second, &sets[r]);
  }
  for (std::size_t r = 0; r < sets.size(); ++r) {
    p.cpus.push_back(std::max(1, CPU_COUNT(&machine_sets.at(p.machines[r]))));
  }
  return p;
}

}  // namespace dagsgd::runtime
