// read_file's refusals and limits (devices, FIFOs, directories, sizes, gzip bombs) and the
// positions JSON errors carry (issue 13, classes 14 and 17).
#include "dagsgd/model/io.h"
#include "common/text.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <string>

namespace dagsgd::model {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/" + std::to_string(::getpid()) + "-io-" + name;
}

using dagsgd::testing::contains;

// gzip of `text` (level 9, one member), as gzip(1) writes it.
std::string gzip(const std::string& text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST(ReadFile, RefusesWhatIsNotARegularFile) {
  auto zero = read_file("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_TRUE(contains(zero.error().message, "'/dev/zero': it is a character device"))
      << zero.error().message;

  auto dir = read_file(::testing::TempDir());
  ASSERT_FALSE(dir.ok());
  EXPECT_TRUE(contains(dir.error().message, "a directory")) << dir.error().message;

  // A FIFO without a writer: refused at once, not waited on.
  const std::string fifo = temp_path("fifo");
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto f = read_file(fifo);
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(contains(f.error().message, "a FIFO")) << f.error().message;
  std::remove(fifo.c_str());

  auto missing = read_file("/nonexistent/x.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.error().message, "'/nonexistent/x.json'"));
}

TEST(ReadFile, SizeLimitNamesTheFileAndTheLimit) {
  const std::string path = temp_path("big.json");
  ASSERT_TRUE(write_file(path, std::string(3000, ' '), true).ok());
  EXPECT_TRUE(read_file(path, 3000).ok());
  auto r = read_file(path, 2048);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, path)) << r.error().message;
  EXPECT_TRUE(contains(r.error().message, "over the 2048 bytes limit")) << r.error().message;
  // Files in /proc report size 0 and still have content.
  auto proc = read_file("/proc/self/status", kMaxDocumentBytes);
  ASSERT_TRUE(proc.ok()) << proc.error().message;
  EXPECT_TRUE(contains(*proc, "Name:"));
  std::remove(path.c_str());
}

TEST(ReadFile, GzipPlainConcatenatedAndCut) {
  const std::string text = R"({"traceEvents": []})";
  const std::string path = temp_path("t.json.gz");
  ASSERT_TRUE(write_file(path, gzip(text), true).ok());
  auto r = read_file(path);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, text);
  // Two members (cat a.gz b.gz) read as one text.
  ASSERT_TRUE(write_file(path, gzip("ab") + gzip("cd"), true).ok());
  EXPECT_EQ(*read_file(path), "abcd");
  // Cut short: an error, not a partial text.
  const std::string whole = gzip(std::string(100000, 'x') + text);
  ASSERT_TRUE(write_file(path, whole.substr(0, whole.size() / 2), true).ok());
  auto cut = read_file(path);
  ASSERT_FALSE(cut.ok());
  EXPECT_TRUE(contains(cut.error().message, "ends early")) << cut.error().message;
  // Named .gz but not gzip: the bytes as they are (as gzread gives them).
  ASSERT_TRUE(write_file(path, text, true).ok());
  EXPECT_EQ(*read_file(path), text);
  std::remove(path.c_str());
}

// A bomb: 64 MiB of spaces in about 64 KiB. Inflating stops at the ratio limit, after
// kGzipRatioFloorBytes of output, not after the whole 64 MiB.
TEST(ReadFile, GzipBombStopsAtTheRatioLimit) {
  const std::string path = temp_path("bomb.json.gz");
  const std::string bomb = gzip(std::string(std::size_t{64} << 20, ' '));
  ASSERT_LT(bomb.size(), std::size_t{1} << 20);
  ASSERT_TRUE(write_file(path, bomb, true).ok());
  auto r = read_file(path);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, path)) << r.error().message;
  EXPECT_TRUE(contains(r.error().message, "over the 100:1 limit")) << r.error().message;
  // The size cap applies to what is inflated, too.
  const std::string small = gzip(std::string(5000, 'x'));
  ASSERT_TRUE(write_file(path, small, true).ok());
  auto capped = read_file(path, 4096);
  ASSERT_FALSE(capped.ok());
  EXPECT_TRUE(contains(capped.error().message, "inflates to more than the 4096 bytes limit"))
      << capped.error().message;
  std::remove(path.c_str());
}

// read_file_text maps plain files of FileText::kMapBytes or more (the page size and one byte
// over it included, whose padding is the page after the file), reads the rest as read_file does,
// refuses what read_file refuses, and a write into a mapped text never reaches the file.
TEST(ReadFileText, MapsLargePlainFilesReadsTheRestAndWritesNothingBack) {
  const std::string path = temp_path("mapped.json");
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const auto map_bytes = static_cast<std::size_t>(FileText::kMapBytes);
  for (std::size_t size :
       {map_bytes, map_bytes + 1, map_bytes + page - 10, map_bytes - 1, std::size_t{100}}) {
    std::string text(size, 'x');
    for (std::size_t i = 0; i < size; i += 997) text[i] = static_cast<char>('a' + i % 26);
    ASSERT_TRUE(write_file(path, text, true).ok());
    auto t = read_file_text(path);
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->mapped(), size >= map_bytes) << size;
    ASSERT_EQ(t->size(), size);
    EXPECT_TRUE(t->view() == text) << size;
    ASSERT_GE(t->capacity(), size + 64);
    // The padding is there to be read and written (the trace reader writes brackets into the
    // text and reads past its end).
    char* d = t->data();
    for (std::size_t i = 0; i < 64; ++i) d[size + i] = ' ';
    d[0] = '[';
    d[size - 1] = ']';
    EXPECT_EQ(*read_file(path), text) << size << ": the file changed";
    FileText moved = std::move(*t);
    EXPECT_EQ(moved.data()[0], '[');
    moved.release();
    EXPECT_EQ(moved.size(), 0u);
  }
  std::remove(path.c_str());
  // What read_file refuses, read_file_text refuses with the same message.
  for (const std::string& bad :
       {std::string("/dev/zero"), ::testing::TempDir(), std::string("/nonexistent/x.json")}) {
    auto a = read_file(bad);
    auto b = read_file_text(bad);
    ASSERT_FALSE(a.ok());
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(a.error().message, b.error().message);
  }
  const std::string big = temp_path("over.json");
  ASSERT_TRUE(write_file(big, std::string(map_bytes + 10, ' '), true).ok());
  auto over = read_file_text(big, static_cast<std::int64_t>(map_bytes));
  ASSERT_FALSE(over.ok());
  EXPECT_TRUE(contains(over.error().message, "limit for this kind of file"))
      << over.error().message;
  std::remove(big.c_str());
  // Gzip is inflated, never mapped.
  const std::string gz = temp_path("t.json.gz");
  ASSERT_TRUE(write_file(gz, gzip(std::string(map_bytes * 2, 'y')), true).ok());
  auto g = read_file_text(gz);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_FALSE(g->mapped());
  EXPECT_EQ(g->size(), map_bytes * 2);
  std::remove(gz.c_str());
}

// A text of kBackgroundReleaseBytes or more goes back on a thread of its own: the FileText is
// empty at once and can hold another text; the mapping and the buffer are given back later (under
// the sanitizers, neither is touched after that nor leaked); a smaller one goes back at once.
// Mapped and in memory, below and at the line, several in a row.
TEST(FileText, LargeTextsAreGivenBackAfterReleaseReturns) {
  const std::size_t line = FileText::kBackgroundReleaseBytes;
  const std::string path = temp_path("large.json");
  for (std::size_t size : {line / 2, line}) {
    const std::string text(size, 'z');
    ASSERT_TRUE(write_file(path, text, true).ok());
    for (int round = 0; round < 8; ++round) {
      auto mapped = read_file_text(path);
      ASSERT_TRUE(mapped.ok()) << mapped.error().message;
      ASSERT_TRUE(mapped->mapped());
      mapped->data()[0] = '[';  // a private page of the mapping, given back with it
      mapped->release();
      EXPECT_EQ(mapped->size(), 0u);
      EXPECT_FALSE(mapped->mapped());
      FileText in_memory(text);
      EXPECT_EQ(in_memory.size(), size);
      in_memory.release();
      EXPECT_EQ(in_memory.size(), 0u);
      in_memory = FileText(std::string("[]"));  // and holds another text after
      EXPECT_EQ(in_memory.view(), "[]");
    }
  }
  EXPECT_EQ(*read_file(path), std::string(line, 'z')) << "the file changed";
  std::remove(path.c_str());
}

TEST(JsonErrors, PositionsOfSyntaxNumbersAndUtf8) {
  EXPECT_EQ(text_position("ab\ncd", 4), "line 2, column 2");
  EXPECT_EQ(json_syntax_error(R"({"a": [1, 2]})"), "");
  const std::string broken = "{\"a\": 1,\n  \"b\": }";
  EXPECT_TRUE(contains(json_syntax_error(broken), "line 2, column 8")) << json_syntax_error(broken);
  // A number beyond double: nlohmann's DOM throws without a position; this gives one.
  const std::string huge = "{\"layers\": [\n {\"forward_flops\": 1e999}]}";
  const std::string e = json_syntax_error(huge);
  EXPECT_TRUE(contains(e, "line 2, column")) << e;
  EXPECT_TRUE(contains(e, "number overflow")) << e;
  const std::string bad_utf8 = "{\"name\": \"a\xff\"}";
  EXPECT_EQ(find_invalid_utf8(bad_utf8), 11u);
  EXPECT_TRUE(contains(json_syntax_error(bad_utf8), "line 1, column"))
      << json_syntax_error(bad_utf8);
  EXPECT_EQ(find_invalid_utf8("caf\xc3\xa9 \xf0\x9f\x98\x80"), std::string::npos);
  EXPECT_EQ(find_invalid_utf8("\xc0\xaf"), 0u);       // overlong
  EXPECT_EQ(find_invalid_utf8("x\xed\xa0\x80"), 1u);  // surrogate
  EXPECT_EQ(find_invalid_utf8("xy\xe2\x82"), 2u);     // cut short
  // Comments, where a reader allows them (hardware catalogs).
  EXPECT_EQ(json_syntax_error("// c\n{}", /*allow_comments=*/true), "");
}

}  // namespace
}  // namespace dagsgd::model
