// `dagsgd collect`: runs any MPI program under the PMPI tracer (libdagsgd-mpitrace.so) and turns
// what its ranks wrote into a run directory: run.manifest plus rank-<r>.trace.json.
#include <cstdio>
#include <memory>

#include "command.h"
#include "dagsgd/runtime/collect.h"

namespace dagsgd::tools {

namespace {

int run_collect(const runtime::CollectRequest& request) {
  auto r = runtime::collect(request);
  if (!r.ok()) return report_error(r.error().message);
  if (!r->failure.empty()) return report_error(r->failure, kExitFailure);
  const trace::RunManifest& m = r->manifest;
  std::fprintf(stderr,
               "dagsgd collect: %d rank%s, %lld events, clock residual %.0f ns; run directory "
               "'%s'\n",
               m.ranks, m.ranks == 1 ? "" : "s", static_cast<long long>(r->events),
               m.clock_residual_ns, r->run_dir.c_str());
  return kExitOk;
}

}  // namespace

void add_collect(CLI::App& root, Action& action) {
  auto [sub, o] = add_command<runtime::CollectRequest>(
      root, action, "collect",
      "Run an MPI program under the PMPI tracer and write a run directory "
      "(run.manifest, rank-<r>.trace.json).\n"
      "Example: dagsgd collect --out run1 -- mpirun -np 4 dagsgd-allreduce-bench",
      run_collect);
  sub->add_option("--out", o->out, "Run directory to write")->required();
  sub->add_flag("--force", o->force, "Replace the run in an existing --out directory");
  sub->add_option("--flush-ms", o->flush_ms,
                  "Write buffered events at least this often, so a killed rank loses at most "
                  "this much (0: only when the buffer fills)")
      ->capture_default_str();
  sub->add_option("command", o->command, "The command to trace, after '--'");
}

}  // namespace dagsgd::tools
