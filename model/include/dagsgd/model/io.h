// Small file helpers shared by every component: whole-file reads with clear errors and limits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "dagsgd/model/expected.h"

namespace dagsgd::model {

// What read_file accepts (docs/limits.md says why these numbers).
// Traces, the largest inputs: 2 GiB of text, plain or inflated.
inline constexpr std::int64_t kMaxTraceBytes = std::int64_t{2} << 30;
// Everything parsed into a JSON DOM or line by line (networks, catalogs, fabric files,
// manifests, logs): 64 MiB, 100 times the largest such file dagsgd has met.
inline constexpr std::int64_t kMaxDocumentBytes = std::int64_t{64} << 20;
// Configuration written by hand and parsed into a JSON DOM (several times the text) with
// per-entry structures: stack files and node-type (topology) files. 1 MiB, 130 times the largest
// bundled one (8 kB); a DOM of 1 MiB peaks near 20 MiB, where 64 MiB ones reach a gigabyte.
inline constexpr std::int64_t kMaxConfigBytes = std::int64_t{1} << 20;
// Gzip: inflating stops once the output is more than this many times the compressed bytes
// consumed so far (real traces compress 5-20x; a bomb of repeated bytes about 1000x) ...
inline constexpr double kMaxGzipRatio = 100;
// ... checked from this much output on, so small files with high ratios still read.
inline constexpr std::int64_t kGzipRatioFloorBytes = std::int64_t{16} << 20;

// Reads a whole regular file (not a device, FIFO or directory) of at most `max_bytes`; a '.gz'
// file is inflated, stopping early beyond `max_bytes` or kMaxGzipRatio. The error names the file.
Expected<std::string> read_file(const std::string& path, std::int64_t max_bytes = kMaxTraceBytes);

// A file's text in memory with at least 64 writable bytes after it (simdjson's padding). A plain
// regular file of kMapBytes or more is mapped privately: its bytes are the page cache's until
// written (a write copies that page only), so nothing is read or zeroed up front. Anything else
// (gzip, small files) is read as read_file reads it. Move-only.
class FileText {
 public:
  // Files this large or larger are mapped.
  static constexpr std::int64_t kMapBytes = std::int64_t{1} << 20;

  FileText() = default;
  explicit FileText(std::string text);
  FileText(FileText&& o) noexcept;
  FileText& operator=(FileText&& o) noexcept;
  FileText(const FileText&) = delete;
  FileText& operator=(const FileText&) = delete;
  ~FileText();

  char* data() { return map_ != nullptr ? map_ : text_.data(); }
  const char* data() const { return map_ != nullptr ? map_ : text_.data(); }
  std::size_t size() const { return map_ != nullptr ? size_ : text_.size(); }
  // Bytes usable at data(), the text included.
  std::size_t capacity() const { return map_ != nullptr ? map_bytes_ : text_.capacity(); }
  std::string_view view() const { return {data(), size()}; }
  bool mapped() const { return map_ != nullptr; }
  // Gives the memory back; the text is empty afterwards. A text of kBackgroundReleaseBytes or
  // more is given back on a detached thread, after this returns.
  void release();
  static constexpr std::size_t kBackgroundReleaseBytes = std::size_t{16} << 20;

 private:
  friend Expected<FileText> read_file_text(const std::string& path, std::int64_t max_bytes);
  std::string text_;
  char* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  std::size_t size_ = 0;
};

// read_file's checks, limits and errors; the text mapped where FileText says. A mapped file
// that another program shortens while it is read ends the process (SIGBUS), as with any
// mapping: traces are not written while dagsgd reads them.
Expected<FileText> read_file_text(const std::string& path, std::int64_t max_bytes = kMaxTraceBytes);

// Writes a whole file. Refuses to replace an existing file (or a link, even a dangling one)
// unless `force`; with `force` a link is replaced by the file, not written through. Atomic: the
// bytes go to a new file beside `path` that is then renamed over it, so a killed process leaves
// either the previous file or the whole new one (and, at worst, a `.dagsgd-tmp-` file beside).
Expected<void> write_file(const std::string& path, const std::string& content, bool force);

// Refuses a `relative` output path (below the output folder `dir`) whose folders below `dir`
// include a link, or a file where a folder goes: dagsgd writes, replaces and removes only inside
// `dir`, never through a link to elsewhere. Folders that do not exist yet are fine.
Expected<void> check_output_path(const std::string& dir, const std::string& relative);

// write_file of `dir`/`relative` after check_output_path.
Expected<void> write_output_file(const std::string& dir, const std::string& relative,
                                 const std::string& content, bool force);

// Removes, from `dir`/`folder` (`folder` "" for `dir` itself), the files (or links: never what
// they name) whose names `ours` accepts and that `keep` does not list: what an earlier run of a
// command wrote that this one does not, so that one folder never mixes two runs. Folders, and
// files of names `ours` refuses, are left alone; nothing is removed when check_output_path
// refuses the folder. Returns the number removed.
std::size_t remove_stale_outputs(const std::string& dir, const std::string& folder,
                                 const std::function<bool(const std::string&)>& ours,
                                 const std::vector<std::string>& keep);

// Takes an exclusive lock on the output folder `dir` (flock on the folder itself), held until the
// process ends; a second process writing into the same folder is refused, naming it. Taking it
// again in the same process succeeds.
Expected<void> lock_output_dir(const std::string& dir);

// Whether anything is at `path`: a file, a directory, or a link (dangling ones included).
bool file_exists(const std::string& path);

// "line 3, column 17": where byte `offset` of `text` is (both 1-based; columns count bytes).
std::string text_position(std::string_view text, std::size_t offset);

// The first JSON syntax error of `text` as "line 3, column 17: <what is wrong>" (invalid UTF-8
// and numbers beyond double included), or "" when `text` is valid JSON. Slow next to simdjson:
// for error messages, after a parse failed.
std::string json_syntax_error(std::string_view text, bool allow_comments = false);

// The byte offset of the first byte of `text` that is not valid UTF-8, or npos.
std::size_t find_invalid_utf8(std::string_view text);

}  // namespace dagsgd::model
