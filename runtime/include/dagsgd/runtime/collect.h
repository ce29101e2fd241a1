// `dagsgd collect`: runs any MPI command with the PMPI tracer injected into its ranks and turns
// what they wrote into a run directory (run.manifest + rank-<r>.trace.json, docs/tracing.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/trace/manifest.h"

namespace dagsgd::runtime {

struct CollectRequest {
  std::string out;  // the run directory
  bool force = false;
  long flush_ms = 200;  // DAGSGD_TRACE_FLUSH_MS of the ranks
  std::vector<std::string> command;
};

struct CollectResult {
  std::string run_dir;          // absolute
  trace::RunManifest manifest;  // as written ("" run_dir and no manifest when nothing was kept)
  std::int64_t events = 0;      // spans in the kept traces
  // "" when the run and every trace are fine; else one line: what went wrong, which traces were
  // kept, and where the partial run directory is (or that none was left).
  std::string failure;
};

// The tracer library: $DAGSGD_MPITRACE_LIB, else beside this executable in the build tree or an
// install. The error says where it looked.
model::Expected<std::string> find_tracer_library();

// The command with the tracer injected: after mpirun's name as -x options (they reach ranks on
// other hosts too), else through `env` (LD_PRELOAD and the DAGSGD_* variables).
std::vector<std::string> traced_command(const std::vector<std::string>& command,
                                        const std::string& library,
                                        std::vector<std::pair<std::string, std::string>>& env);

// Checks the request, finds the tracer, prepares the directory, runs the command (passing a
// SIGTERM on to it), then repairs and inspects what each rank left and writes the manifest. An
// error is bad input (exit 2: no command, an --out that exists without --force); a run that
// went wrong is a result with `failure` set (exit 1). A failed run that left no trace leaves no
// directory either; one that left traces keeps them, as a partial run directory.
model::Expected<CollectResult> collect(const CollectRequest& request);

}  // namespace dagsgd::runtime
