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
