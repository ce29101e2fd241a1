// The run directory's manifest (run.manifest): what ran, where, and what was measured.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dagsgd/model/expected.h"

namespace dagsgd::trace {

struct IterationStats {
  int warmup = 0;               // leading iterations excluded from the statistics
  std::vector<double> times_s;  // every measured iteration, warm-up included
  double mean_s = 0;
  double p50_s = 0;
  double p95_s = 0;
};

// Fills mean/p50/p95 from times_s, skipping the first `warmup` iterations.
void compute_stats(IterationStats& s);

struct RunManifest {
  std::string tool_version;
  std::string kind;                  // "train" or "collect"
  std::vector<std::string> command;  // argv of what ran
  int ranks = 0;
  std::vector<std::string> hosts;  // per rank
  // Per rank, where its CPU time came from (empty when not recorded): the kernel's boot id
  // (ranks with the same one share the machine's cores, whatever their network namespace or
  // host name) and how many CPUs the rank may run on (its affinity).
  std::vector<std::string> machines;
  std::vector<int> cpus;
  std::string model;                          // model name or file ("" for collect)
  std::map<std::string, std::string> config;  // runtime configuration, flag -> value
  IterationStats iterations;
  double clock_residual_ns = 0;  // max residual of cross-rank clock alignment
  // Trace file names, relative to the run directory: never absolute, never through "..".
  std::vector<std::string> traces;
  std::string status = "ok";  // "ok", or what went wrong
  // Names this run; every rank trace written for it carries the same one in distributedInfo, so a
  // reader can tell a stray file of another run. Always written; "" when read from an old run.
  std::string run_id;
};

// The batch size the run recorded (config 'batch': samples per rank per iteration), nullopt when
// it records none; an error when the value is not a whole number from 1 to 1e9. Not checked by
// manifest_from_json: a run that does not say can still be analysed and replayed.
model::Expected<std::optional<int>> recorded_batch(const RunManifest& m);

std::string manifest_to_json(const RunManifest& m);
// Every field is checked: its type (the error names the field), numbers in range (ranks from 1
// to 2^20, warmup from 0 to below the measured iterations, times finite and >= 0), trace paths
// inside the run directory. Fields not listed in RunManifest are ignored.
model::Expected<RunManifest> manifest_from_json(const std::string& text, const std::string& where);

// The standard file names of a run directory. The manifest is JSON but its name does not end in
// ".json" or ".gz": tools that take every such file of a directory for a rank trace (Holistic Trace
// Analysis, hta/common/trace_file.py:32-34) open a run directory as it is.
inline constexpr const char* kManifestName = "run.manifest";
// What runs written before kManifestName named it; still read.
inline constexpr const char* kLegacyManifestName = "manifest.json";
// The manifest of `run_dir`: kManifestName, else kLegacyManifestName; "" when it has neither.
std::string find_manifest(const std::string& run_dir);
std::string rank_trace_name(int rank);  // "rank-<r>.trace.json"
// The rank of a file named by rank_trace_name(), nullopt for any other name (".gz" included).
std::optional<int> parse_rank_trace_name(std::string_view file_name);

model::Expected<void> write_manifest(const std::string& run_dir, const RunManifest& m);
model::Expected<RunManifest> read_manifest(const std::string& run_dir);

}  // namespace dagsgd::trace
