// Reads traces of a real run (a dagsgd run directory, or Kineto/PyTorch-profiler files, one per
// rank) into compact per-rank event tables, counting bad records in an import report.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/units.h"
#include "dagsgd/trace/event.h"
#include "dagsgd/trace/manifest.h"

namespace dagsgd::trace {

// What an event is, from its `cat` (and, for our tracer's MPI spans, its args).
enum class EventCategory : std::uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kRuntime,  // cuda_runtime / cuda_driver calls on a CPU thread
  kSync,     // cuda_sync: a GPU-side record of a stream/event/context synchronization
  kAnnotation,
  kGpuAnnotation,
  kCpuOp,
  kMpi,    // our PMPI tracer's spans (cat "mpi")
  kOther,  // a category we do not know (counted as a problem)
};
inline constexpr int kEventCategoryCount = 10;
const char* category_name(EventCategory c);

// What few events carry beside the common fields: a collective's output size, algorithm and
// process group, and a cuda_sync record's wait. Kept apart (ImportedRank::details) so that the
// event table, which a large trace fills with millions of events, stays at 80 bytes an event.
struct EventDetail {
  std::int64_t out_bytes = -1;       // NCCL Out msg nelems × dtype size (-1: not recorded)
  std::int64_t wait_on_corr = -1;    // cuda_sync Event Sync: the cudaEventRecord it waits for
  std::int32_t algorithm = -1;       // string index: args.algorithm
  std::int32_t group_ranks = -1;     // string index: NCCL "Process Group Ranks" as written
  std::int32_t wait_on_stream = -1;  // cuda_sync: stream waited on (-1: device/context)
};

// One complete ('X') event. Strings are interned per rank (ImportedRank::strings) so that a
// 100 MB trace does not hold a std::string per event; the rarer fields are in
// ImportedRank::details (ImportedRank::detail).
struct ImportedEvent {
  model::Nanos ts = 0;  // ns on the run's common time axis (after clock corrections)
  model::Nanos dur = 0;
  std::int64_t tid = 0;           // CPU thread, or GPU stream for GPU events
  std::int64_t correlation = -1;  // CUDA correlation id (args.correlation), -1 none
  std::int64_t bytes = -1;        // args.bytes, or NCCL In msg nelems × dtype size
  std::int32_t name = 0;          // index into strings
  std::int32_t collective = -1;   // string index: args.collective / NCCL "Collective name"
  std::int32_t layer = -1;
  std::int32_t iteration = -1;
  std::int32_t bucket = -1;     // our gradient group
  std::int32_t group_size = 0;  // NCCL "Group size" / our comm_size
  std::int32_t device = -1;     // GPU events: args.device
  // Kernels: a hash of args.grid and args.block as written (0: neither recorded). Kernels of one
  // name run with several shapes; one name and launch shape is one piece of work.
  std::uint32_t launch = 0;
  std::int32_t detail = -1;  // index into ImportedRank::details (-1: every field its default)
  EventCategory category = EventCategory::kOther;
  Phase phase = Phase::kNone;  // args.phase (ours)
  bool gpu = false;            // runs on a GPU stream (kernel, memcpy, memset, sync record)
};

// A problem kind counted by the importer; the first offending event is kept for the message.
struct ImportProblem {
  std::string kind;  // "negative duration", "unmatched flow", "unknown category", ...
  std::int64_t count = 0;
  std::string first;  // "event 1042 ('aten::mm'): dur -5 us"
};

struct FileReport {
  std::string file;
  int rank = 0;
  std::int64_t bytes = 0;   // uncompressed JSON size
  std::int64_t events = 0;  // records in traceEvents, all phases
  std::int64_t complete_events = 0;
  std::int64_t flows_matched = 0;    // ac2g / fwdbwd start-end pairs
  std::int64_t flows_unmatched = 0;  // starts without an end (counted as problems)
  std::int64_t flows_end_only = 0;   // ends without a start: Kineto's mark on runtime calls
  std::int64_t metadata = 0;
  std::array<std::int64_t, kEventCategoryCount> by_category{};
  bool truncated = false;  // the tail was cut off and repaired
  std::int64_t dropped_bytes = 0;
  bool drift_corrected = false;  // our tracer's end clock sample was applied
  std::vector<ImportProblem> problems;
  // One more problem of `kind`; `first` is kept when it is the first of its kind.
  void count_problem(const std::string& kind, const std::string& first);
};

struct ImportReport {
  std::vector<FileReport> files;
  // Cross-rank clock alignment estimated from collectives (all ranks leave a collective
  // together): per-rank offset subtracted, and the residual spread after it.
  std::vector<model::Nanos> clock_offsets;
  model::Nanos clock_residual = 0;
  bool clocks_aligned = false;  // offsets were applied (Kineto traces of several ranks)
  // Problems of the run as a whole (a manifest that lists fewer traces than ranks after a
  // failed collect), counted like the files' and fatal under --strict.
  std::vector<ImportProblem> run_problems;
  std::int64_t problem_count() const;
  // "rank-1.json: 3 negative duration (first: event 12 ...)"; empty when clean.
  std::string summary() const;
};

// What a Chakra execution trace holds beside its events (RunSource::kChakra; empty otherwise):
// its dependencies and, when the file says them (dagsgd export writes them), its iterations.
struct ChakraRankInfo {
  std::vector<std::uint64_t> node_id;    // per event: its node's id in the file
  std::vector<std::int32_t> deps_begin;  // per event, then one past the last: its range in deps
  std::vector<std::int32_t> deps;        // parents (data_deps), as event indices
  std::vector<std::int8_t> task_kind;    // per event: the model::TaskKind it states (-1: none)
  std::vector<std::int32_t> iteration_start;  // per iteration: the event that begins it
  std::int32_t iteration_end = -1;            // the event whose end ends the last iteration
  std::vector<model::Nanos> bounds;           // measured: the start of each iteration, then the end
  std::vector<model::Nanos> measured_iteration;  // the main rank's measured iterations
  int warmup = 0;
  bool timed = false;  // start_time_micros recorded; else starts follow from the dependencies
};

struct ImportedRank {
  int rank = 0;
  std::string file;
  std::vector<ImportedEvent> events;  // sorted by (ts, longer first)
  std::vector<std::string> strings;   // interned names
  std::vector<EventDetail> details;   // the rarer fields of the events that have them
  std::map<std::int64_t, std::string> thread_names;
  int world_size = 1;
  std::string backend;  // distributedInfo.backend ("nccl", "mpi", ...)
  std::string run_id;   // distributedInfo.run_id of dagsgd writers ("" when not recorded)
  bool world_size_stated = false;  // distributedInfo or our metadata gave world_size
  // A dagsgd_rank_info record: a rank trace of `dagsgd train` or `dagsgd collect`, which is read
  // with its run's manifest (run.manifest).
  bool dagsgd_rank_info = false;
  std::int64_t cpu_pid = 0;
  ChakraRankInfo chakra;  // Chakra execution traces only
  const std::string& str(std::int32_t i) const { return strings[static_cast<std::size_t>(i)]; }
  // The rarer fields of `e` (all their defaults when it has none).
  const EventDetail& detail(const ImportedEvent& e) const {
    static const EventDetail kNone;
    return e.detail < 0 ? kNone : details[static_cast<std::size_t>(e.detail)];
  }
};

// kChakra: Chakra execution traces (NAME.<rank>.et), read by trace/src/chakra_import.cc.
enum class RunSource { kDagsgdTrain, kDagsgdCollect, kKineto, kChakra };
const char* run_source_name(RunSource s);

struct ImportedRun {
  RunSource source = RunSource::kKineto;
  std::string path;                     // the run directory, or the first file
  std::optional<RunManifest> manifest;  // run directories only
  std::vector<ImportedRank> ranks;      // ordered by rank
  ImportReport report;
  model::Nanos origin = 0;  // the earliest event time; times are kept absolute
};

struct ImportOptions {
  bool strict = false;  // any counted problem becomes an error
  // Estimate per-rank clock offsets from collectives and apply them (Kineto only: our own
  // traces are already aligned, and the estimate is only reported for them).
  bool align_clocks = true;
  // The simdjson kernel the JSON walk runs ("icelake", "haswell", "fallback"; one of
  // import_kernels()); empty: the best this CPU runs. For tests that compare kernels.
  std::string kernel;
  // How much of traceEvents the reader indexes at a time (0: its default, 1 MiB). For tests.
  std::size_t window_bytes = 0;
  // Threads that read one file's text: 0, two for a text of 8 MiB or more when the CPU has two
  // cores or more, else one; 1: one; 2: two whenever the text is eight windows long or more
  // (for tests). The result is the same either way.
  int threads = 0;
};

// The kernels the trace reader is built for that this CPU runs, best first: the JSON walk is
// compiled once per simdjson kernel and the first is what imports use.
std::vector<std::string> import_kernels();

// One file (uncompressed text already in memory). `rank_hint` is used when the trace does not
// say its rank. Fails when the text is not a trace at all (no JSON object with traceEvents), is
// not valid JSON (the message gives the line and column) or states a rank or world size out of
// range. Events whose numbers are out of range are counted problems (docs/limits.md): ts beyond
// +-kMaxTimestamp, dur at or above kMaxDuration ("out of range"), negative dur, X events without
// dur ("missing dur"), args that do not fit their fields ("bad args value").
model::Expected<ImportedRank> import_trace_text(std::string text, const std::string& where,
                                                int rank_hint, FileReport& report);
// The same with ImportOptions::kernel, window_bytes and threads (the rest is import_run's); an
// Error when this CPU does not run the kernel named.
model::Expected<ImportedRank> import_trace_text(std::string text, const std::string& where,
                                                int rank_hint, FileReport& report,
                                                const ImportOptions& options);
// The same from a file's text as model::read_file_text gives it (mapped when large).
model::Expected<ImportedRank> import_trace_text(model::FileText text, const std::string& where,
                                                int rank_hint, FileReport& report,
                                                const ImportOptions& options);

// A run: one directory (a dagsgd run directory with its manifest, a directory of Kineto
// .json/.json.gz files, or one of Chakra execution traces NAME.<rank>.et) or a list of trace
// files (Kineto, or Chakra: by the .et extension or their content; never both in one run). Refused
// (an Error naming the files): rank traces whose run ids differ from each other or from the
// manifest's (traces of two runs), a manifest whose status is "ok" but that lists other than
// `ranks` traces, traces whose world size differs from the manifest's ranks, and runs whose events
// (after clock alignment) span kMaxDuration or more or whose durations add up to kMaxDagTime or
// more.
model::Expected<ImportedRun> import_run(const std::vector<std::string>& paths,
                                        const ImportOptions& options);

}  // namespace dagsgd::trace
