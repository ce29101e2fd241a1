// The trace reader's JSON walk is built once per simdjson kernel and chosen by the CPU, and reads
// traceEvents in windows: every kernel this CPU runs and every window size must import every
// trace identically (events, strings, report, the DAG built from it), on the shared and the
// repository's traces, the fuzz corpus and odd inputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/temp.h"
#include "dagsgd/model/io.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::trace {
namespace {

namespace fs = std::filesystem;

// Everything an import gives, as text: two kernels agree when their texts are equal.
std::string dump(const model::Expected<ImportedRank>& r, const FileReport& rep) {
  std::ostringstream o;
  if (!r.ok()) {
    o << "error: " << r.error().message << "\n";
    return o.str();
  }
  o << "rank " << r->rank << " world " << r->world_size << " stated " << r->world_size_stated
    << " backend " << r->backend << " run " << r->run_id << " pid " << r->cpu_pid << "\n";
  for (const auto& s : r->strings) o << "s " << s << "\n";
  for (const auto& [tid, name] : r->thread_names) o << "thread " << tid << " " << name << "\n";
  for (const auto& e : r->events) {
    const EventDetail& d = r->detail(e);
    o << e.ts << " " << e.dur << " " << e.tid << " " << e.correlation << " " << e.bytes << " "
      << d.wait_on_corr << " " << e.name << " " << e.collective << " " << d.algorithm << " "
      << e.layer << " " << e.iteration << " " << e.bucket << " " << e.group_size << " "
      << d.wait_on_stream << " " << e.device << " " << static_cast<int>(e.category) << " "
      << static_cast<int>(e.phase) << " " << e.gpu << " " << d.out_bytes << " " << d.group_ranks
      << " " << e.launch << " " << e.detail << "\n";
  }
  o << "details " << r->details.size() << "\n";
  o << "report " << rep.bytes << " " << rep.events << " " << rep.complete_events << " "
    << rep.flows_matched << " " << rep.flows_unmatched << " " << rep.flows_end_only << " "
    << rep.metadata << " " << rep.truncated << " " << rep.dropped_bytes << " "
    << rep.drift_corrected << "\n";
  for (auto c : rep.by_category) o << c << " ";
  o << "\n";
  for (const auto& p : rep.problems)
    o << "problem " << p.kind << " " << p.count << " " << p.first << "\n";
  return o.str();
}

std::string import_with(const std::string& text, const std::string& kernel, std::size_t window = 0,
                        int threads = 0) {
  FileReport rep;
  ImportOptions o;
  o.kernel = kernel;
  o.window_bytes = window;
  o.threads = threads;
  auto r = import_trace_text(text, "t.json", 0, rep, o);
  return dump(r, rep);
}

// The text of every file under `dir` (plain or gzip).
std::vector<std::pair<std::string, std::string>> texts_under(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  std::error_code ec;
  for (const auto& ent : fs::recursive_directory_iterator(dir, ec)) {
    if (!ent.is_regular_file()) continue;
    auto text = model::read_file(ent.path().string());
    if (text.ok()) out.emplace_back(ent.path().string(), std::move(*text));
  }
  return out;
}

TEST(ImporterKernels, NamedDistinctPortableLast) {
  const auto kernels = import_kernels();
  ASSERT_FALSE(kernels.empty());
  EXPECT_EQ(std::set<std::string>(kernels.begin(), kernels.end()).size(), kernels.size());
#if defined(__x86_64__)
  // The portable build is simdjson's baseline kernel, and every CPU runs it.
  EXPECT_EQ(kernels.back(), "fallback");
#endif
  FileReport rep;
  ImportOptions o;
  o.kernel = "no-such-kernel";
  auto r = import_trace_text("{\"traceEvents\": []}", "t.json", 0, rep, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no-such-kernel"), std::string::npos) << r.error().message;
}

std::vector<std::pair<std::string, std::string>> every_trace() {
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const std::string& dir :
       {std::string(DAGSGD_SHARED_DATA) + "/traces",
        std::string(DAGSGD_SOURCE_DIR) + "/datasets/samples/kineto",
        std::string(DAGSGD_SOURCE_DIR) + "/tests/fuzz/corpus/importer",
        std::string(DAGSGD_SOURCE_DIR) + "/tests/fuzz/regressions/importer"}) {
    for (auto& t : texts_under(dir)) inputs.push_back(std::move(t));
  }
  return inputs;
}

TEST(ImporterKernels, SameImportOfEveryTrace) {
  const auto kernels = import_kernels();
  const auto inputs = every_trace();
  ASSERT_GE(inputs.size(), 10u);
  for (const auto& [path, text] : inputs) {
    const std::string want = import_with(text, kernels.front());
    for (std::size_t k = 1; k < kernels.size(); ++k) {
      EXPECT_EQ(import_with(text, kernels[k]), want)
          << path << ": " << kernels[k] << " and " << kernels.front();
    }
  }
}

// What the walk reads by hand rather than through simdjson's general calls: escaped keys and
// strings, numbers at the edges of the fast paths, records that break.
TEST(ImporterKernels, SameImportOfOddRecords) {
  const std::vector<std::string> texts = {
      R"({"traceEvents": [{"n\u0061me": "a\"b", "ph": "X", "cat": "kernel", "ts": 1.5, "dur": 2,
          "args": {"str\u0065am": 7, "bytes": "12", "Group size": 2.6, "device": -0}}]})",
      R"({"traceEvents": [{"name": "x", "ph": "X", "cat": "cpu_op", "ts": 1e3, "dur": 0.0004,
          "pid": 12345678901234567, "tid": "9", "args": {"layer": 2147483648, "iteration": 01}}]})",
      R"({"traceEvents": [{"name": "x", "ph": "X", "cat": "cpu_op", "ts": -12.3456, "dur": 1.0005,
          "pid": -3, "tid": 1.5, "id": "abc"}, {"ph": "s", "cat": "ac2g", "id": 3, "ts": 1},
          {"ph": "f", "cat": "ac2g", "id": 3, "ts": 2}, {"ph": "s", "cat": "fwdbwd", "id": 4}, {"ph": "s", "cat": "x", "id": "a long string id"}]})",
      R"({"distributedInfo": {"rank": 3, "world_size": 4, "backend": "nc\u0063l"},
          "traceEvents": [{"name": "x", "ph": "X", "cat": "gpu_memcpy", "ts": 5, "dur": 1}, 3]})",
      R"({"traceEvents": [{"name": "x", "ph": "X", "cat": "kernel", "ts": 5, "dur": 1},
          {"name": "y", "ph": "X", "cat": "kernel", "ts": 4, "dur": 9999999999999999999}]})",
      R"({"traceEvents": [{"name": "x", "ph": "X", "cat": "kernel", "ts": 5, "dur": 1},
          {"name": "y", "ph": "X", "cat": "kernel", "ts": 4, "du)",
      R"({"traceEvents": [{"name": 5, "ph": "X", "cat": "mystery", "ts": tru, "dur": 1}]})",
      R"({"distributedInfo": {"rank": 99999999}, "traceEvents": []})",
      R"([1, 2])",
      R"({"traceEvents": {}})",
  };
  const auto kernels = import_kernels();
  for (const auto& text : texts) {
    const std::string want = import_with(text, kernels.front());
    for (std::size_t k = 1; k < kernels.size(); ++k) {
      EXPECT_EQ(import_with(text, kernels[k]), want) << text << ": " << kernels[k];
    }
  }
}

// Windows of a few events (and smaller than one: the window grows), cut wherever "}," is,
// inside strings and nested objects included: the import of the whole text.
TEST(ImporterKernels, WindowsChangeNothing) {
  const std::string kernel = import_kernels().front();
  auto inputs = every_trace();
  inputs.emplace_back("strings", R"({"traceEvents": [{"name": "a},b", "ph": "X", "cat": "kernel",
      "ts": 1, "dur": 1, "args": {"x": {"y": 1}, "z": 2}}, {"name": "c},\"d", "ph": "X",
      "cat": "kernel", "ts": 2, "dur": 1}], "deviceProperties": [{"id": 0}, {"id": 1}],
      "distributedInfo": {"rank": 1}, "x": "},"})");
  inputs.emplace_back("twice", R"({"traceEvents": [{"name": "a", "ph": "X", "cat": "kernel",
      "ts": 1, "dur": 1}, {"name": "b"}], "traceEvents": [{"name": "c", "ph": "X",
      "cat": "kernel", "ts": 2, "dur": 1}, {"ph": "M"}]})");
  // The array closed early by a stray ']': what follows is not the root's fields.
  inputs.emplace_back("early end", R"({"traceEvents": [{"name": "a", "ph": "X", "cat": "kernel",
      "ts": 1, "dur": 1, "args": {"x": 1}}], {"name": "b", "ph": "X", "cat": "kernel", "ts": 2,
      "dur": 1}, {"name": "c"}]})");
  inputs.emplace_back("empty", R"({"traceEvents": [], "a": [{"b": 1}, {"c": 2}]})");
  inputs.emplace_back("cut", R"({"traceEvents": [{"name": "a", "ph": "X", "cat": "kernel",
      "ts": 1, "dur": 1}, {"name": "b", "ph": "X", "cat": "kernel", "ts": 2, "dur": 1}, {"na)");
  for (const auto& [path, text] : inputs) {
    const std::string want = import_with(text, kernel, std::size_t{1} << 40);
    for (std::size_t window :
         {std::size_t{0}, std::size_t{1000}, std::size_t{97}, std::size_t{8}}) {
      // The shared traces are large: only the default and a 1000-byte window for them.
      if (text.size() > 1'000'000 && window > 0 && window < 1000) continue;
      EXPECT_EQ(import_with(text, kernel, window), want) << path << ": window " << window;
    }
  }
}

// A Kineto-like trace of `n` records with everything the two halves of a split read must agree
// on: names first seen in either half, flows that start in one half and end in the other, thread
// names given twice, our metadata, records that are counted problems or not objects at `bad`
// (-1: none), collectives and algorithms. `tail`: what follows traceEvents.
std::string split_trace(int n, int bad, const std::string& tail) {
  std::string t = R"({"distributedInfo": {"rank": 2, "world_size": 4}, "traceEvents": [)";
  for (int i = 0; i < n; ++i) {
    if (i > 0) t += i % 7 == 0 ? ",\n  " : ", ";
    const std::string ts = std::to_string((i * 37) % 101);
    if (i == bad) {
      t += i % 2 == 0 ? R"({"name": "bad", "ph": "X", "cat": "kernel", "ts": 1, "dur": -4})"
                      : "[1, 2]";
    } else if (i % 11 == 3) {
      t += R"({"ph": ")" + std::string(i < n / 2 ? "s" : "f") + R"(", "cat": "ac2g", "id": )" +
           std::to_string(i % 5) + R"(, "ts": )" + ts + "}";
    } else if (i % 13 == 5) {
      t += R"({"ph": "M", "name": "thread_name", "tid": 7, "args": {"name": "t)" +
           std::to_string(i) + R"("}})";
    } else if (i == n - 3) {
      t += R"({"ph": "M", "name": "dagsgd_clock_sync", "args": {"drift_t0_ns": 0,
           "drift_t1_ns": 100000, "drift_correction_ns": 50}})";
    } else if (i % 9 == 4) {
      t += R"({"name": "ncclKernel_AllReduce", "ph": "X", "cat": "kernel", "ts": )" + ts +
           R"(, "dur": 2, "args": {"stream": 7, "device": 0, "correlation": )" + std::to_string(i) +
           R"(, "Collective name": "allreduce", "Group size": 4,
           "In msg nelems": 1024, "dtype": "Float", "algorithm": "ring)" +
           std::to_string(i % 3) + R"("}})";
    } else {
      t += R"({"name": "op)" + std::to_string(i % (i < n / 2 ? 10 : 25)) +
           R"(", "ph": "X", "cat": "cpu_op", "pid": 5, "tid": )" + std::to_string(i % 3) +
           R"(, "ts": )" + ts + R"(, "dur": )" + std::to_string(i % 4) + "}";
    }
  }
  return t + "]" + tail + "}";
}

// The text split in two and read on two threads (ImportOptions::threads) imports as one walk
// does: clean texts (taken in from the second thread), texts whose second half holds a counted
// problem or a record that is not an object (read again by the first thread, for the message's
// event number), a split point inside a string, traceEvents ending before the middle, a cut
// tail, and every trace of the other tests.
TEST(ImporterKernels, TwoThreadsChangeNothing) {
  const std::string kernel = import_kernels().front();
  std::vector<std::pair<std::string, std::string>> inputs;
  const std::string info = R"(, "distributedInfo": {"rank": 1, "backend": "nccl"},
      "baseTimeNanoseconds": 5)";
  inputs.emplace_back("clean", split_trace(400, -1, ""));
  inputs.emplace_back("clean, info after the events", split_trace(400, -1, info));
  inputs.emplace_back("problem in the first half", split_trace(400, 100, ""));
  inputs.emplace_back("problem in the second half", split_trace(400, 300, ""));
  inputs.emplace_back("not an object in the second half", split_trace(400, 301, ""));
  // Long events after a short array: the middle of the text is past traceEvents.
  inputs.emplace_back("events end early", split_trace(
                                              40, -1, R"(, "x": [)" + [] {
                                                std::string s;
                                                for (int i = 0; i < 300; ++i)
                                                  s += std::string(i > 0 ? ", " : "") +
                                                       R"({"a": 1}, {"b": 2})";
                                                return s;
                                              }() + "]"));
  // "}, {" inside a long name in the middle: the split's ',' is inside a string.
  inputs.emplace_back("split inside a string", [] {
    std::string t = split_trace(200, -1, "");
    const std::string name(4000, 'n');
    std::string odd;
    for (int i = 0; i < 60; ++i) odd += "}, {";
    const std::string ev = R"(, {"name": ")" + name + odd + name +
                           R"(", "ph": "X", "cat": "kernel", "ts": 3, "dur": 1})";
    return t.insert(t.size() - 2, ev);
  }());
  // Each part's order is sorted on its own thread and the two merged: a part already in order
  // (no keys) beside one that is not, and two parts in order whose whole is not.
  auto halves = [](bool second_in_order) {
    std::string t = R"({"traceEvents": [)";
    for (int i = 0; i < 400; ++i) {
      const int ts = i < 200 ? 300 + i : (second_in_order ? i - 200 : (i * 37) % 101);
      t += std::string(i > 0 ? ", " : "") + R"({"name": "op)" + std::to_string(i % 9) +
           R"(", "ph": "X", "cat": "cpu_op", "tid": 1, "ts": )" + std::to_string(ts) +
           R"(, "dur": )" + std::to_string(i % 4) + "}";
    }
    return t + "]}";
  };
  inputs.emplace_back("first half in order, second not", halves(false));
  inputs.emplace_back("each half in order, not the whole", halves(true));
  std::string cut = split_trace(400, -1, "");
  cut.resize(cut.size() - 30);
  inputs.emplace_back("cut", cut);
  for (auto& t : every_trace()) inputs.push_back(std::move(t));
  int split_read = 0;
  for (const auto& [path, text] : inputs) {
    const std::string want = import_with(text, kernel, std::size_t{1} << 40, 1);
    for (std::size_t window : {std::size_t{300}, std::size_t{1000}, std::size_t{0}}) {
      if (window > 0 && text.size() < 8 * window) continue;
      if (window > 0 && window < 1000 && text.size() > 1'000'000) continue;
      EXPECT_EQ(import_with(text, kernel, window, 2), want) << path << ": window " << window;
      ++split_read;
    }
  }
  EXPECT_GE(split_read, 20);
}

// A large plain file is mapped (model::read_file_text), written into where the walk reads it in
// windows and split, and not used as the sort's scratch: the import equals the one of its text
// in a string, for a clean trace and a cut one (repaired from a copy), and the file is unchanged.
TEST(ImporterKernels, MappedFileImportsAsItsText) {
  auto whole =
      model::read_file(std::string(DAGSGD_SHARED_DATA) + "/traces/kineto/nccl_data.json.gz");
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  const std::string dir = dagsgd::testing::fresh_test_dir("dagsgd-mapped");
  const std::string path = dir + "/trace.json";
  for (const std::string& text : {*whole, whole->substr(0, whole->size() * 3 / 5)}) {
    ASSERT_GE(text.size(), static_cast<std::size_t>(model::FileText::kMapBytes));
    ASSERT_TRUE(model::write_file(path, text, true).ok());
    // One walk of the string (its buffer the sort's scratch) against the mapped file read in
    // two parts (each part's order sorted on its thread, merged into new tables) and in one.
    FileReport rep_string;
    ImportOptions one;
    one.threads = 1;
    const auto b = import_trace_text(text, "t.json", 0, rep_string, one);
    for (int threads : {0, 1, 2}) {
      auto mapped = model::read_file_text(path);
      ASSERT_TRUE(mapped.ok()) << mapped.error().message;
      ASSERT_TRUE(mapped->mapped());
      FileReport rep_mapped;
      ImportOptions options;
      options.threads = threads;
      const auto a = import_trace_text(std::move(*mapped), "t.json", 0, rep_mapped, options);
      EXPECT_EQ(dump(a, rep_mapped), dump(b, rep_string))
          << text.size() << " bytes, threads " << threads;
      EXPECT_EQ(*model::read_file(path), text) << "the file changed";
    }
  }
  fs::remove_all(dir);
}

// Events out of order are sorted in the text's buffer when it holds 120 bytes per kept event
// and in new tables when it does not (file_parser.cc): both give (ts, longer first, file
// order for equal events).
TEST(ImporterKernels, SortInTheTextBufferOrNotGivesOneOrder) {
  const int ts[] = {5, 3, 3, 9, 1, 3, 7, 3};
  const int dur[] = {1, 2, 2, 1, 4, 1, 1, 2};
  std::string compact = R"({"traceEvents": [)";
  std::string roomy = compact;
  for (int i = 0; i < 8; ++i) {
    const std::string ev = R"({"ph":"X","cat":"kernel","name":"k)" + std::to_string(i) +
                           R"(","ts":)" + std::to_string(ts[i]) + R"(,"dur":)" +
                           std::to_string(dur[i]) + "}";
    compact += (i > 0 ? "," : "") + ev;
    roomy += (i > 0 ? "," : "") + ev + std::string(200, ' ');
  }
  compact += "]}";
  roomy += "]}";
  ASSERT_LT(compact.size(), 8u * 120u);
  ASSERT_GT(roomy.size(), 8u * 120u);
  for (const std::string* text : {&compact, &roomy}) {
    FileReport rep;
    auto r = import_trace_text(*text, "t.json", 0, rep);
    ASSERT_TRUE(r.ok()) << r.error().message;
    std::string order;
    for (const auto& e : r->events) order += r->str(e.name) + " ";
    EXPECT_EQ(order, "k4 k1 k2 k7 k5 k0 k6 k3 ") << text->size() << " bytes";
  }
}

TEST(ImporterKernels, SameDagFromEveryKernel) {
  const std::string kineto = std::string(DAGSGD_SHARED_DATA) + "/traces/kineto/";
  for (const auto& files : std::vector<std::vector<std::string>>{
           {kineto + "nccl_data.json.gz"},
           {kineto + "sampled_rank-0.json.gz", kineto + "sampled_rank-1.json.gz"}}) {
    std::string want;
    for (const auto& kernel : import_kernels()) {
      ImportOptions o;
      o.kernel = kernel;
      auto run = import_run(files, o);
      ASSERT_TRUE(run.ok()) << run.error().message;
      auto dag = build_trace_dag(*run);
      ASSERT_TRUE(dag.ok()) << dag.error().message;
      std::ostringstream s;
      s << dag->dag.task_count() << " tasks, " << dag->dag.edge_count() << " edges, "
        << dag->collectives.size() << " collectives\n";
      for (const auto& t : dag->tasks) {
        s << t.rank << " " << t.event << " " << t.collective << " " << t.name << " "
          << t.measured_start << " " << t.measured_dur << "\n";
      }
      if (want.empty()) want = s.str();
      EXPECT_EQ(s.str(), want) << files[0] << ": " << kernel;
    }
  }
}

}  // namespace
}  // namespace dagsgd::trace
