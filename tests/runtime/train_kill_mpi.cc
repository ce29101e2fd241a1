// `dagsgd train --trace` is crash-safe (label `mpi`): a rank killed with SIGKILL in the middle of
// training leaves, like every other rank, a trace that imports and holds each iteration it
// completed, whole.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "dagsgd/model/io.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/trace_repair.h"

namespace {

namespace fs = std::filesystem;
using namespace dagsgd;

// The trace as a reader sees it while the rank still writes (repaired, parsed); null if the
// file is not there yet.
nlohmann::json peek(const fs::path& path) {
  auto text = model::read_file(path.string());
  if (!text) return nullptr;
  auto fixed = trace::repair_truncated_trace(*text, path.string());
  if (!fixed) return nullptr;
  return nlohmann::json::parse(fixed->text, nullptr, false);
}

int steps_in(const nlohmann::json& t) {
  int n = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e.value("ph", "") == "X" && e.value("cat", "") == "user_annotation") ++n;
  }
  return n;
}

TEST(TrainKill, KilledRankLeavesEveryCompletedIteration) {
  const fs::path dir =
      fs::temp_directory_path() / ("dagsgd-train-kill-" + std::to_string(getpid()));
  fs::remove_all(dir);
  // `timeout` ends the run should the kill below never happen.
  const std::string cmd = "exec timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 " +
                          std::string(DAGSGD_BINARY) +
                          " train --model mlp --widths 64,32 --iterations 1000000 --no-eval "
                          "--overlap wfbp --trace " +
                          dir.string() + " >/dev/null 2>&1";
  pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until rank 1 has completed a few iterations, then SIGKILL it (its pid is in the trace).
  const fs::path victim = dir / "rank-1.trace.json";
  std::int64_t pid = 0;
  int seen = 0;
  for (int i = 0; i < 3000 && seen < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    nlohmann::json t = peek(victim);
    if (t.is_discarded() || t.is_null()) continue;
    seen = steps_in(t);
    for (const auto& e : t["traceEvents"]) {
      if (e.value("name", "") == "dagsgd_rank_info") pid = e["args"]["os_pid"];
    }
  }
  ASSERT_GE(seen, 5) << "rank 1 never completed 5 iterations";
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(static_cast<pid_t>(pid), SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(launcher, &status, 0), launcher);
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the run cannot have succeeded";

  // The run directory imports: the manifest (written at the start) says it did not finish, and
  // each rank's trace holds whole iterations, at least those seen before the kill.
  auto run = trace::import_run({dir.string()}, trace::ImportOptions{});
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_TRUE(run->manifest.has_value());
  EXPECT_NE(run->manifest->status, "ok");
  EXPECT_FALSE(run->manifest->run_id.empty());
  ASSERT_EQ(run->ranks.size(), 2u);
  for (const auto& rank : run->ranks) {
    SCOPED_TRACE("rank " + std::to_string(rank.rank));
    std::set<int> steps;
    std::map<int, int> backward;  // iteration -> backward spans (3 fc + 2 relu)
    std::map<int, int> updates;
    for (const auto& e : rank.events) {
      const std::string& name = rank.str(e.name);
      if (name.rfind("ProfilerStep#", 0) == 0) steps.insert(e.iteration);
      if (e.phase == trace::Phase::kBackward) ++backward[e.iteration];
      if (e.phase == trace::Phase::kUpdate) ++updates[e.iteration];
    }
    if (rank.rank == 1) {
      EXPECT_GE(static_cast<int>(steps.size()), seen);
    }
    ASSERT_FALSE(steps.empty());
    EXPECT_EQ(*steps.begin(), 0);
    EXPECT_EQ(*steps.rbegin(), static_cast<int>(steps.size()) - 1);  // no iteration missing
    for (int it : steps) {
      EXPECT_EQ(backward[it], 5) << "iteration " << it;
      EXPECT_EQ(updates[it], 1) << "iteration " << it;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
