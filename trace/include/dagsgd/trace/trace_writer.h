// Streams events to a Kineto-compatible JSON trace file, buffered, with a crash-safe flush.
#pragma once

#include <cstdint>
#include <string>

#include "dagsgd/model/expected.h"
#include "dagsgd/trace/event.h"

namespace dagsgd::trace {

struct DistributedInfo {
  int rank = 0;
  int world_size = 1;
  std::string backend = "mpi";
  std::string run_id;  // the run's id (the manifest's "run_id"); "" writes none
};

// Writes `{"schemaVersion":1,"distributedInfo":{...},...,"traceEvents":[` on open, one event per
// line, and `]}` on close. Events reach the file when the buffer fills, on flush() and on close().
// A file that was never closed (killed process) is valid JSON up to its last complete line;
// the reader repairs the missing tail.
class TraceWriter {
 public:
  TraceWriter() = default;
  ~TraceWriter();
  TraceWriter(TraceWriter&& other) noexcept;
  TraceWriter& operator=(TraceWriter&& other) noexcept;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Creates (or truncates) `path`. `base_time_ns` is the absolute clock value that ts=0 stands for.
  static model::Expected<TraceWriter> open(const std::string& path, const DistributedInfo& info,
                                           std::int64_t base_time_ns,
                                           std::size_t buffer_bytes = 1 << 16);

  bool is_open() const { return fd_ >= 0; }
  void write(const Event& e);
  // Writes what is buffered with write(2) only: safe to call from a fatal-signal handler when no
  // write() is in progress on this writer.
  void flush() noexcept;
  model::Expected<void> close();
  std::int64_t events_written() const { return count_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string buf_;
  std::size_t limit_ = 0;
  std::int64_t count_ = 0;
  int fd_ = -1;
};

// Appends `s` to `out` as a JSON string literal, quotes included.
void append_json_string(std::string& out, const std::string& s);
// Appends one event as a JSON object (no trailing comma or newline).
void append_event_json(std::string& out, const Event& e);

}  // namespace dagsgd::trace
