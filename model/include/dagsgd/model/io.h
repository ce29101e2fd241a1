// Small file helpers shared by every component: whole-file reads with clear errors and limits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dagsgd/model/expected.h"

namespace dagsgd::model {

// What read_file accepts (docs/limits.md says why these numbers).
// Traces, the largest inputs: 2 GiB of text, plain or inflated.
inline constexpr std::int64_t kMaxTraceBytes = std::int64_t{2} << 30;
// Everything parsed into a JSON DOM or line by line (networks, catalogs, fabric files,
// manifests, logs): 64 MiB, 100 times the largest such file dagsgd has met.
inline constexpr std::int64_t kMaxDocumentBytes = std::int64_t{64} << 20;
// Gzip: inflating stops once the output is more than this many times the compressed bytes
// consumed so far (real traces compress 5-20x; a bomb of repeated bytes about 1000x) ...
inline constexpr double kMaxGzipRatio = 100;
// ... checked from this much output on, so small files with high ratios still read.
inline constexpr std::int64_t kGzipRatioFloorBytes = std::int64_t{16} << 20;

// Reads a whole regular file (not a device, FIFO or directory) of at most `max_bytes`; a '.gz'
// file is inflated, stopping early beyond `max_bytes` or kMaxGzipRatio. The error names the file.
Expected<std::string> read_file(const std::string& path, std::int64_t max_bytes = kMaxTraceBytes);

// Writes a whole file. Refuses to replace an existing file (or a link, even a dangling one)
// unless `force`; with `force` a link is replaced by the file, not written through.
Expected<void> write_file(const std::string& path, const std::string& content, bool force);

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
