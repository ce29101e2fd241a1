// The trace importer's run assembly: which files make a run (a run directory's manifest, a
// directory of Kineto traces, a list), one import per file (import_trace_text.cc), rank order,
// run-id and time-span checks, and clock alignment across ranks.
#include "dagsgd/trace/importer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <optional>
#include <utility>

#include "chakra_import.h"
#include "dagsgd/model/dag.h"
#include "dagsgd/model/interrupt.h"
#include "dagsgd/model/io.h"
#include "dagsgd/trace/collective.h"

namespace dagsgd::trace {

namespace detail {

bool is_kineto_name(const std::string& name) {
  return name.ends_with(".json") || name.ends_with(".json.gz");
}

model::Expected<void> order_by_rank(ImportedRun& run) {
  std::vector<std::size_t> order(run.ranks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return run.ranks[a].rank < run.ranks[b].rank;
  });
  std::vector<ImportedRank> ranks;
  std::vector<FileReport> reps;
  for (std::size_t i : order) {
    if (!ranks.empty() && ranks.back().rank == run.ranks[i].rank) {
      return model::Error{"'" + run.ranks[i].file + "' and '" + ranks.back().file +
                          "' are both rank " + std::to_string(run.ranks[i].rank)};
    }
    ranks.push_back(std::move(run.ranks[i]));
    reps.push_back(std::move(run.report.files[i]));
  }
  run.ranks = std::move(ranks);
  run.report.files = std::move(reps);
  return model::ok();
}

}  // namespace detail

namespace fs = std::filesystem;
using model::Nanos;

namespace {

// The name of `value` in `names`, a table in the order of its enum; `fallback` past its end.
template <typename Enum, std::size_t N>
const char* name_in(const char* const (&names)[N], Enum value, const char* fallback) {
  const auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : fallback;
}

}  // namespace

const char* category_name(EventCategory c) {
  // In the order of the enum; the Kineto categories by their names in event.h.
  static constexpr const char* kNames[] = {cat::kKernel,
                                           cat::kGpuMemcpy,
                                           cat::kGpuMemset,
                                           cat::kCudaRuntime,
                                           cat::kCudaSync,
                                           cat::kUserAnnotation,
                                           cat::kGpuUserAnnotation,
                                           cat::kCpuOp,
                                           "mpi",
                                           "other"};
  static_assert(std::size(kNames) == kEventCategoryCount);
  return name_in(kNames, c, "other");
}

const char* run_source_name(RunSource s) {
  // In the order of the enum.
  static constexpr const char* kNames[] = {"dagsgd-train", "dagsgd-collect", "kineto", "chakra"};
  return name_in(kNames, s, "kineto");
}

void FileReport::count_problem(const std::string& kind, const std::string& first) {
  for (auto& p : problems) {
    if (p.kind == kind) {
      ++p.count;
      return;
    }
  }
  problems.push_back(ImportProblem{kind, 1, first});
}

std::int64_t ImportReport::problem_count() const {
  std::int64_t n = 0;
  for (const auto& p : run_problems) n += p.count;
  for (const auto& f : files) {
    for (const auto& p : f.problems) n += p.count;
  }
  return n;
}

std::string ImportReport::summary() const {
  std::string out;
  for (const auto& p : run_problems) {
    if (!out.empty()) out += "; ";
    out += "the run: " + std::to_string(p.count) + " " + p.kind + " (" + p.first + ")";
  }
  for (const auto& f : files) {
    for (const auto& p : f.problems) {
      if (!out.empty()) out += "; ";
      out += "'" + f.file + "': " + std::to_string(p.count) + " " + p.kind + " (first: " + p.first +
             ")";
    }
  }
  return out;
}

namespace {

bool is_trace_file(const fs::path& p) { return detail::is_kineto_name(p.filename().string()); }

// Collectives (NCCL kernels, MPI collectives, our gradient groups), in issue order per rank.
std::vector<Nanos> collective_ends(const ImportedRank& r) {
  std::vector<Nanos> ends;
  for (const auto& e : r.events) {
    if (e.collective < 0) continue;
    if (!leaves_together(classify_collective(r.str(e.collective)))) continue;
    // A smaller process group's collectives are not on every rank: their k-th ones differ.
    if (e.group_size > 0 && e.group_size < r.world_size) continue;
    if (e.gpu || e.category == EventCategory::kMpi) ends.push_back(e.ts + e.dur);
  }
  return ends;
}

// Offsets of every rank to rank 0 from the ends of matching collectives (the k-th on each rank):
// the median difference, and the largest deviation from it as the residual.
void align_clocks(ImportedRun& run, bool apply) {
  auto& rep = run.report;
  rep.clock_offsets.assign(run.ranks.size(), 0);
  if (run.ranks.size() < 2) return;
  auto ref = collective_ends(run.ranks[0]);
  if (ref.empty()) return;
  Nanos residual = 0;
  bool any = false;
  for (std::size_t r = 1; r < run.ranks.size(); ++r) {
    auto ends = collective_ends(run.ranks[r]);
    std::size_t n = std::min(ends.size(), ref.size());
    if (n == 0) continue;
    std::vector<Nanos> d(n);
    for (std::size_t k = 0; k < n; ++k) d[k] = ends[k] - ref[k];
    std::vector<Nanos> sorted = d;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(n / 2),
                     sorted.end());
    Nanos off = sorted[n / 2];
    rep.clock_offsets[r] = off;
    // In double: with timestamps up to +-kMaxTimestamp, x - off can pass int64.
    for (Nanos x : d) {
      residual = std::max(residual, model::saturating_nanos(std::abs(static_cast<double>(x) -
                                                                     static_cast<double>(off))));
    }
    any = true;
  }
  rep.clock_residual = residual;
  if (apply && any) {
    for (std::size_t r = 1; r < run.ranks.size(); ++r) {
      for (auto& e : run.ranks[r].events) e.ts -= rep.clock_offsets[r];
    }
    rep.clocks_aligned = true;
  }
}

}  // namespace

namespace {

// Traces of one run carry one run id (dagsgd's writers put it in the manifest and in every
// trace's distributedInfo); any difference, or an id on some files and not on others, means the
// files come from different runs. Traces without ids (older runs, Kineto) are accepted as one.
model::Expected<void> check_run_ids(const ImportedRun& run, const std::string& manifest_path) {
  bool any = run.manifest && !run.manifest->run_id.empty();
  for (const auto& r : run.ranks) any = any || !r.run_id.empty();
  if (!any) return model::ok();
  auto said = [](const std::string& id) {
    return id.empty() ? std::string("no run id") : "run id '" + id + "'";
  };
  std::string ref_id;
  std::string ref_file;
  if (run.manifest) {
    ref_id = run.manifest->run_id;
    ref_file = manifest_path;
  } else {
    ref_id = run.ranks.front().run_id;
    ref_file = run.ranks.front().file;
  }
  for (const auto& r : run.ranks) {
    if (r.run_id == ref_id) continue;
    return model::Error{"'" + r.file + "' (" + said(r.run_id) + ") and '" + ref_file + "' (" +
                        said(ref_id) + ") are not from the same run"};
  }
  return model::ok();
}

// The earliest start and latest end of the run's events, and the sum of their durations, must
// let every time derived from them fit in int64 (docs/limits.md).
model::Expected<void> check_time_span(const ImportedRun& run) {
  const ImportedRank* first_rank = nullptr;
  const ImportedRank* last_rank = nullptr;
  Nanos first = 0;
  Nanos last = 0;
  double total = 0;
  for (const auto& r : run.ranks) {
    for (const auto& e : r.events) {
      if (first_rank == nullptr || e.ts < first) {
        first = e.ts;
        first_rank = &r;
      }
      if (last_rank == nullptr || e.ts + e.dur > last) {
        last = e.ts + e.dur;
        last_rank = &r;
      }
      total += static_cast<double>(e.dur);
    }
  }
  if (first_rank == nullptr) return model::ok();
  // In double: after clock alignment two ranks' times may be up to 1.2e19 ns apart.
  const double span = static_cast<double>(last) - static_cast<double>(first);
  if (!(span < static_cast<double>(model::kMaxDuration))) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", span * 1e-9);
    return model::Error{"'" + run.path + "': the events span " + buf + " s, from an event of '" +
                        first_rank->file + "' to one of '" + last_rank->file +
                        "': out of range (at most 1e15 ns, 11.6 days; traces of different runs?)"};
  }
  if (!(total < static_cast<double>(model::kMaxDagTime) / 2)) {
    return model::Error{"'" + run.path +
                        "': the events' durations add up to 2^61 ns or more: out of range"};
  }
  return model::ok();
}

bool is_directory_quiet(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

bool exists_quiet(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// A path that exists as a link but cannot be followed (a loop, too many levels, a component
// that is not a folder): an Error naming it. A path that does not exist is left to the reader.
model::Expected<void> check_path_resolves(const std::string& path) {
  std::error_code ec;
  (void)fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    return model::Error{"cannot read '" + path + "': " + ec.message()};
  }
  return model::ok();
}

// The traces a run directory's manifest names (read_manifest keeps them inside the directory):
// its list, else rank-<r>.trace.json[.gz] for each of its ranks.
std::vector<std::string> manifest_trace_files(const fs::path& dir, const RunManifest& m) {
  std::vector<std::string> files;
  for (const auto& t : m.traces) files.push_back((dir / t).string());
  if (!files.empty()) return files;
  for (int r = 0; r < m.ranks; ++r) {
    fs::path p = dir / rank_trace_name(r);
    if (!exists_quiet(p) && exists_quiet(p.string() + ".gz")) p = p.string() + ".gz";
    files.push_back(p.string());
  }
  return files;
}

// Trace files given one by one that are a run directory's traces: the directory when they are
// all of the traces its manifest names (read as the directory is), an error when they are some
// of them, nullopt otherwise (files from elsewhere).
model::Expected<std::optional<std::string>> run_directory_of(
    const std::vector<std::string>& paths) {
  std::error_code ec;
  const fs::path dir = fs::path(paths[0]).parent_path();
  const std::string found = find_manifest(dir.empty() ? "." : dir.string());
  if (found.empty()) return std::optional<std::string>();
  const fs::path manifest(found);
  auto key = [&ec](const std::string& p) { return fs::weakly_canonical(p, ec).string(); };
  std::vector<std::string> given;
  for (const auto& p : paths) {
    if (fs::path(p).parent_path() != dir) return std::optional<std::string>();
    given.push_back(key(p));
  }
  auto m = read_manifest(dir.empty() ? "." : dir.string());
  if (!m) return m.error();
  std::vector<std::string> listed;
  for (const auto& f : manifest_trace_files(manifest.parent_path(), *m)) listed.push_back(key(f));
  std::sort(given.begin(), given.end());
  std::sort(listed.begin(), listed.end());
  std::vector<std::string> in_run;
  std::set_intersection(given.begin(), given.end(), listed.begin(), listed.end(),
                        std::back_inserter(in_run));
  if (in_run.empty()) return std::optional<std::string>();
  if (given == listed) return std::optional<std::string>(manifest.parent_path().string());
  return model::Error{"'" + manifest.string() + "' names " + std::to_string(listed.size()) +
                      " rank trace(s) and " + std::to_string(in_run.size()) +
                      " of them are given: give the run directory '" +
                      manifest.parent_path().string() + "' or all of its traces"};
}

// A rank trace dagsgd wrote (train or collect) is read with its run's manifest (run.manifest):
// without it the run's phases, collectives and warm-up would be taken for a Kineto trace's and
// misread.
model::Expected<void> check_dagsgd_traces_have_manifest(const ImportedRun& run) {
  if (run.manifest) return model::ok();
  for (const auto& r : run.ranks) {
    bool ours = r.dagsgd_rank_info || !r.run_id.empty();
    for (std::size_t i = 0; !ours && i < r.events.size(); ++i) {
      ours = r.events[i].phase != Phase::kNone;
    }
    if (!ours) continue;
    return model::Error{
        "'" + r.file +
        "' is a rank trace written by dagsgd train or collect, which is read "
        "with its run's manifest (run.manifest; none beside it): give the run directory"};
  }
  return model::ok();
}

// The run with its time span checked and its origin (the earliest event) set.
model::Expected<ImportedRun> checked_run(ImportedRun run) {
  DAGSGD_TRY(check_time_span(run));
  run.origin = 0;
  bool first = true;
  for (const auto& r : run.ranks) {
    for (const auto& e : r.events) {
      if (first || e.ts < run.origin) run.origin = e.ts;
      first = false;
    }
  }
  return run;
}

}  // namespace

model::Expected<ImportedRun> import_run(const std::vector<std::string>& paths,
                                        const ImportOptions& options) {
  if (paths.empty()) return model::Error{"no trace given"};
  DAGSGD_TRY(check_path_resolves(paths[0]));
  if (paths.size() > 1 || !is_directory_quiet(paths[0])) {
    auto dir = run_directory_of(paths);
    if (!dir) return dir.error();
    if (*dir) return import_run({**dir}, options);
  }
  auto chakra = detail::chakra_files(paths);
  if (!chakra) return chakra.error();
  if (!chakra->empty()) {
    auto run = detail::import_chakra_run(paths[0], *chakra, options);
    if (!run) return run.error();
    // A Chakra file's times are on its run's axis already (dagsgd export writes them so).
    auto checked = checked_run(std::move(*run));
    if (checked) checked->origin = std::min<Nanos>(0, checked->origin);
    return checked;
  }
  ImportedRun run;
  run.path = paths[0];
  std::vector<std::string> files;
  std::string manifest_path;
  // Every look at the file system takes an error code: a link loop or an unreadable folder is
  // bad input, named, not a filesystem_error thrown through the caller.
  DAGSGD_TRY(check_path_resolves(paths[0]));
  if (paths.size() == 1 && is_directory_quiet(paths[0])) {
    const fs::path dir(paths[0]);
    DAGSGD_TRY(check_path_resolves((dir / kManifestName).string()));
    DAGSGD_TRY(check_path_resolves((dir / kLegacyManifestName).string()));
    manifest_path = find_manifest(dir.string());
    if (!manifest_path.empty()) {
      auto m = read_manifest(dir.string());
      if (!m) return m.error();
      run.source = m->kind == "collect" ? RunSource::kDagsgdCollect : RunSource::kDagsgdTrain;
      files = manifest_trace_files(dir, *m);
      if (!m->traces.empty() && files.size() != static_cast<std::size_t>(m->ranks)) {
        const std::string counts = std::to_string(m->ranks) + " ranks but lists " +
                                   std::to_string(files.size()) + " trace(s)";
        if (m->status == "ok") {
          return model::Error{"manifest '" + manifest_path + "': " + counts +
                              ", and its status is \"ok\""};
        }
        // What a failed collect writes: the ranks that left no trace are in its status.
        run.report.run_problems.push_back(
            ImportProblem{"missing rank traces", 1,
                          "manifest '" + manifest_path + "': " + counts +
                              "; status: " + m->status.substr(0, 200)});
      }
      run.manifest = std::move(*m);
    } else {
      std::error_code ec;
      for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code type_ec;
        if (it->is_regular_file(type_ec) && is_trace_file(it->path())) {
          files.push_back(it->path());
        }
      }
      if (ec) return model::Error{"cannot list '" + paths[0] + "': " + ec.message()};
      std::sort(files.begin(), files.end());
      if (files.empty()) {
        return model::Error{"'" + paths[0] + "': neither a run directory (no " + kManifestName +
                            ") nor a directory of "
                            ".json/.json.gz or .et (Chakra) traces"};
      }
    }
  } else {
    for (const auto& p : paths) {
      DAGSGD_TRY(check_path_resolves(p));
      if (is_directory_quiet(p)) {
        return model::Error{"'" + p + "': give either one directory or a list of trace files"};
      }
      files.push_back(p);
    }
  }
  if (options.strict && !run.report.run_problems.empty()) {
    const auto& p = run.report.run_problems.front();
    return model::Error{p.first + " (--strict)"};
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (model::interrupt_requested()) return model::Error{model::kInterruptedMessage};
    auto text = model::read_file_text(files[i]);
    if (!text) return text.error();
    FileReport rep;
    auto rank = import_trace_text(std::move(*text), files[i], static_cast<int>(i), rep, options);
    if (!rank) return rank.error();
    rep.rank = rank->rank;
    if (options.strict && !rep.problems.empty()) {
      const auto& p = rep.problems.front();
      return model::Error{"'" + files[i] + "': " + p.kind + " (" + p.first + "); " +
                          std::to_string(p.count) + " in all (--strict)"};
    }
    if (run.manifest) {
      const int ranks = run.manifest->ranks;
      if (rank->world_size_stated && rank->world_size != ranks) {
        return model::Error{"'" + files[i] + "' is a trace of " + std::to_string(rank->world_size) +
                            " ranks, but manifest '" + manifest_path + "' says " +
                            std::to_string(ranks) + ": not from this run"};
      }
      if (rank->rank >= ranks) {
        return model::Error{"'" + files[i] + "' is rank " + std::to_string(rank->rank) +
                            ", but manifest '" + manifest_path + "' says " + std::to_string(ranks) +
                            " ranks"};
      }
    }
    run.ranks.push_back(std::move(*rank));
    run.report.files.push_back(std::move(rep));
  }
  DAGSGD_TRY(check_run_ids(run, manifest_path));
  DAGSGD_TRY(check_dagsgd_traces_have_manifest(run));
  DAGSGD_TRY(detail::order_by_rank(run));
  align_clocks(run, options.align_clocks && run.source == RunSource::kKineto);
  return checked_run(std::move(run));
}

}  // namespace dagsgd::trace