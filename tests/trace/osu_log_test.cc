// The micro-benchmark log reader on B-Caffe's real OSU logs, nccl-tests output and damaged logs.
#include "dagsgd/trace/osu_log.h"

#include <gtest/gtest.h>

namespace dagsgd::trace {
namespace {

const std::string kBcaffeDir = std::string(DAGSGD_SHARED_DATA) + "/published/b-caffe/";

TEST(OsuLog, ReadsBcaffeAllreduceLogs) {
  auto four = read_latency_log(kBcaffeDir + "allreduce4.log");
  ASSERT_TRUE(four.ok()) << four.error().message;
  EXPECT_EQ(four->format, "osu");
  EXPECT_EQ(four->benchmark, "OSU MPI Allreduce Latency Test v5.4.0");
  EXPECT_FALSE(four->ranks.has_value());
  ASSERT_EQ(four->points.size(), 266u);  // 4 B to 1 MiB
  EXPECT_EQ(four->points.front().bytes, 4);
  EXPECT_DOUBLE_EQ(four->points.front().latency_us, 54.50);
  EXPECT_EQ(four->points.front().line, 4);
  EXPECT_EQ(four->points.back().bytes, 1'048'576);
  EXPECT_DOUBLE_EQ(four->points.back().latency_us, 2251.96);
  // The eager-to-rendezvous step the README points out: 8 KiB -> 12 KiB.
  EXPECT_EQ(four->points[11].bytes, 8192);
  EXPECT_EQ(four->points[12].bytes, 12288);
  EXPECT_GT(four->points[12].latency_us, 2 * four->points[11].latency_us);
}

TEST(OsuLog, RankPrefixedRows) {
  // allreduce2.log and allreduce8.log prefix every row with "<ranks>,".
  for (int p : {2, 8}) {
    auto log = read_latency_log(kBcaffeDir + "allreduce" + std::to_string(p) + ".log");
    ASSERT_TRUE(log.ok()) << log.error().message;
    ASSERT_TRUE(log->ranks.has_value());
    EXPECT_EQ(*log->ranks, p);
    ASSERT_EQ(log->points.size(), 266u);
    EXPECT_EQ(log->points.back().bytes, 1'048'576);
  }
  auto two = read_latency_log(kBcaffeDir + "allreduce2.log");
  EXPECT_DOUBLE_EQ(two->points.front().latency_us, 31.92);
  EXPECT_DOUBLE_EQ(two->points.back().latency_us, 1839.14);
}

TEST(OsuLog, FullFormatAndLauncherNoise) {
  const std::string text =
      "Warning: Permanently added 'node2' to the list of known hosts.\n"
      "# OSU MPI Allreduce Latency Test v7.3\n"
      "# Datatype: MPI_FLOAT.\n"
      "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n"
      "4                       1.52              1.40              1.66        1000\n"
      "8                       1.55              1.41              1.70        1000\n";
  auto log = parse_latency_log(text, "full.log");
  ASSERT_TRUE(log.ok()) << log.error().message;
  ASSERT_EQ(log->points.size(), 2u);
  EXPECT_DOUBLE_EQ(log->points[1].latency_us, 1.55);
  EXPECT_DOUBLE_EQ(log->points[1].max_latency_us, 1.70);
  EXPECT_DOUBLE_EQ(log->points[1].min_latency_us, 1.41);  // the fastest rank (the root's)
  EXPECT_EQ(log->points[1].line, 6);
  // The short table has no Max column; a full header with a short row says so.
  auto avg = parse_latency_log("# Size  Avg Latency(us)\n4  1.5\n", "avg.log");
  ASSERT_TRUE(avg.ok());
  EXPECT_LT(avg->points[0].max_latency_us, 0);
  EXPECT_LT(avg->points[0].min_latency_us, 0);
  auto bad_min = parse_latency_log(
      "# Size  Avg Latency(us)  Min Latency(us)  Max Latency(us)  Iterations\n4  1.5 x 2 10\n",
      "min.log");
  ASSERT_FALSE(bad_min.ok());
  EXPECT_NE(bad_min.error().message.find("line 2: min latency 'x' is not a number"),
            std::string::npos)
      << bad_min.error().message;
  auto short_row = parse_latency_log(
      "# Size  Avg Latency(us)  Min Latency(us)  Max Latency(us)  Iterations\n4  1.5\n",
      "short.log");
  ASSERT_FALSE(short_row.ok());
  EXPECT_NE(short_row.error().message.find("short.log': line 2"), std::string::npos)
      << short_row.error().message;
  EXPECT_NE(short_row.error().message.find("Max Latency(us) column"), std::string::npos)
      << short_row.error().message;
}

TEST(OsuLog, NcclTests) {
  const std::string text =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5\n"
      "#\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid  41 on     node1 device  0 [0x07] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  1 Group  0 Pid  42 on     node1 device  1 [0x0b] NVIDIA A100-SXM4-80GB\n"
      "#\n"
      "#                                                              out-of-place            "
      "           in-place\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
      "(us)  (GB/s)  (GB/s)\n"
      "           8             2     float     sum      -1    10.52    0.00    0.00      0    "
      "10.26    0.00    0.00      0\n"
      "        1024           256     float     sum      -1    11.80    0.09    0.09      0    "
      "11.61    0.09    0.09      0\n"
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 0.045\n";
  auto log = parse_latency_log(text, "nccl.log");
  ASSERT_TRUE(log.ok()) << log.error().message;
  EXPECT_EQ(log->format, "nccl-tests");
  ASSERT_EQ(log->points.size(), 2u);
  EXPECT_EQ(log->points[1].bytes, 1024);
  EXPECT_DOUBLE_EQ(log->points[1].latency_us, 11.80);  // out-of-place
  ASSERT_TRUE(log->ranks.has_value());
  EXPECT_EQ(*log->ranks, 2);
}

TEST(OsuLog, MalformedLinesNameFileAndLine) {
  struct Case {
    std::string body, expect;
  };
  const Case cases[] = {
      {"4 31.9\n8 abc\n", "line 4: latency 'abc'"},
      {"4 31.9\n-8 12.0\n", "line 4: size '-8'"},
      {"4 31.9\n8\n", "line 4: expected '<size> <avg latency us>'"},
      {"2,4 31.9\n4,8 32.0\n", "line 4: rank prefix 4 differs from 2 on line 3"},
      {"4 31.9\n8 -1\n", "line 4: latency '-1'"},
  };
  for (const auto& c : cases) {
    auto log =
        parse_latency_log("# OSU MPI Allreduce\n# Size  Avg Latency(us)\n" + c.body, "bad.log");
    ASSERT_FALSE(log.ok()) << c.body;
    EXPECT_NE(log.error().message.find("log 'bad.log': " + c.expect), std::string::npos)
        << log.error().message;
  }
  auto none = parse_latency_log("hello\n1 2\n", "none.log");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no OSU"), std::string::npos);
  auto empty = parse_latency_log("# Size  Avg Latency(us)\n", "empty.log");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("no rows"), std::string::npos);
  auto missing = read_latency_log("/nonexistent/osu.log");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/osu.log"), std::string::npos);
}

// The repeats of a benchmark become one log: per size the median of each column, written as an
// OSU table that parse_latency_log reads back; logs of other sizes are refused, naming the file.
TEST(OsuLog, RepeatsBecomeTheirPerSizeMedian) {
  auto log = [](const std::string& rows) {
    auto parsed = parse_latency_log(
        "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n" + rows,
        "log");
    EXPECT_TRUE(parsed.ok()) << parsed.error().message;
    return *parsed;
  };
  const auto a = log("262144 46071.31 32480.77 57433.09 10\n524288 55712.5 42917.9 74423.35 10\n");
  const auto b =
      log("262144 24345.96 22371.93 26939.89 10\n524288 37346.91 32369.57 43314.94 10\n");
  const auto c =
      log("262144 24312.22 22125.54 26821.42 10\n524288 37318.04 31712.97 42892.44 10\n");
  auto m = median_latency_log({a, b, c}, {"a.log", "b.log", "c.log"});
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto back = parse_latency_log(osu_table(*m, "median of 3", 10), "median.log");
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->points.size(), 2u);
  EXPECT_EQ(back->points[0].bytes, 262144);
  EXPECT_DOUBLE_EQ(back->points[0].latency_us, 24345.96);
  EXPECT_DOUBLE_EQ(back->points[0].min_latency_us, 22371.93);
  EXPECT_DOUBLE_EQ(back->points[0].max_latency_us, 26939.89);
  EXPECT_DOUBLE_EQ(back->points[1].latency_us, 37346.91);
  EXPECT_DOUBLE_EQ(back->points[1].min_latency_us, 32369.57);  // each column on its own
  EXPECT_DOUBLE_EQ(back->points[1].max_latency_us, 43314.94);
  // Two runs: the middle of the two.
  m = median_latency_log({a, b}, {"a.log", "b.log"});
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_DOUBLE_EQ(m->points[0].latency_us, (46071.31 + 24345.96) / 2);
  // A log without Min and Max: the median keeps the average column alone.
  auto plain = parse_latency_log("# Size       Avg Latency(us)\n262144 30000\n524288 40000\n", "p");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  m = median_latency_log({a, b, *plain}, {"a.log", "b.log", "plain.log"});
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_DOUBLE_EQ(m->points[0].latency_us, 30000);
  EXPECT_LT(m->points[0].max_latency_us, 0);
  EXPECT_EQ(osu_table(*m, "x", 10).find("Max Latency"), std::string::npos);
  const auto other = log("262144 1 1 1 10\n1048576 2 2 2 10\n");
  auto refused = median_latency_log({a, other}, {"a.log", "other.log"});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("other.log"), std::string::npos)
      << refused.error().message;
}

// dagsgd-allreduce-bench --back-to-back says so in its header; the flag survives a median and
// its table, and logs timed two ways make no median.
TEST(OsuLog, BackToBackLogsSayHowTheyWereTimed) {
  const std::string header =
      "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n"
      "262144 24000.0 23990.0 24010.0 10\n524288 40000.0 39990.0 40010.0 10\n";
  auto stream = parse_latency_log(
      "# dagsgd allreduce latency benchmark (OSU format), 3 ranks, 10 iterations, "
      "MPI_Iallreduce + MPI_Wait, in place, back to back (Min, Max: the fastest, the slowest "
      "rank's mean)\n" +
          header,
      "stream.log");
  ASSERT_TRUE(stream.ok()) << stream.error().message;
  EXPECT_TRUE(stream->back_to_back);
  auto barriers = parse_latency_log(
      "# dagsgd allreduce latency benchmark (OSU format), 3 ranks, 10 iterations\n" + header,
      "barriers.log");
  ASSERT_TRUE(barriers.ok()) << barriers.error().message;
  EXPECT_FALSE(barriers->back_to_back);
  auto m = median_latency_log({*stream, *stream}, {"a.log", "b.log"});
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(m->back_to_back);
  const std::string table = osu_table(*m, "median of 2", 10);
  EXPECT_EQ(table.rfind("# median of 2, back to back\n", 0), 0u) << table;
  auto back = parse_latency_log(table, "median.log");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(back->back_to_back);
  auto mixed = median_latency_log({*stream, *barriers}, {"a.log", "barriers.log"});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().message.find(
                "log 'barriers.log': timed between barriers, but 'a.log' back to back"),
            std::string::npos)
      << mixed.error().message;
}

}  // namespace
}  // namespace dagsgd::trace
