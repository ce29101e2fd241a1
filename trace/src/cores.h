// How many cores a trace import may use now: the cores this process may run on, less those other
// work keeps busy at this moment.
#pragma once

#include <sched.h>

#include <cstdio>
#include <thread>

namespace dagsgd::trace::detail {

// The cores this process may run on (its affinity mask; the hardware's count where that is
// unknown), at least 1.
inline int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

// The usable cores no other runnable task holds now: usable_cores() less the tasks the kernel
// counts as runnable (/proc/loadavg's fourth field, the whole machine's) other than the caller,
// at least 1; usable_cores() where that count cannot be read. A snapshot: it decides how many
// threads read, never what they read.
inline int idle_cores() {
  const int usable = usable_cores();
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return usable;
  double one = 0;
  double five = 0;
  double fifteen = 0;
  int running = 0;
  int total = 0;
  const int got = std::fscanf(f, "%lf %lf %lf %d/%d", &one, &five, &fifteen, &running, &total);
  std::fclose(f);
  if (got != 5 || running < 1) return usable;
  const int idle = usable - (running - 1);
  return idle < 1 ? 1 : idle;
}

}  // namespace dagsgd::trace::detail
