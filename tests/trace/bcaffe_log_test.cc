// The B-Caffe per-tensor log reader on the real GoogLeNet logs (two dumps, first all zeros).
#include "dagsgd/trace/bcaffe_log.h"

#include <gtest/gtest.h>

namespace dagsgd::trace {
namespace {

const std::string kBcaffe = std::string(DAGSGD_SHARED_DATA) + "/published/b-caffe/";

std::int64_t total_elements(const BcaffeLog& log) {
  std::int64_t n = 0;
  for (const auto& t : log.tensors) n += t.elements;
  return n;
}

TEST(BcaffeLog, SkipsTheZeroDump) {
  auto log = read_bcaffe_log(kBcaffe + "tmp2comm.log");
  ASSERT_TRUE(log.ok()) << log.error().message;
  EXPECT_EQ(log->dumps, 2);
  EXPECT_EQ(log->zero_dumps, 1);
  EXPECT_EQ(log->skipped, 1);
  EXPECT_EQ(log->chosen_dump, 1);
  EXPECT_EQ(log->first_line, 129);
  ASSERT_EQ(log->tensors.size(), 128u);
  EXPECT_EQ(total_elements(*log), 13'379'136);  // GoogLeNet with auxiliary classifiers
  EXPECT_EQ(log->tensors[0].elements, 9408);
  EXPECT_DOUBLE_EQ(log->tensors[0].backward_us, 14690.2);
  EXPECT_DOUBLE_EQ(log->tensors[0].allreduce_us, 298);
  EXPECT_FALSE(log->tensors[0].merged_allreduce_us.has_value());
  EXPECT_EQ(log->tensors[127].param_id, 127);
}

TEST(BcaffeLog, SingleDumpAndMergedColumn) {
  auto one = read_bcaffe_log(kBcaffe + "tmpcomm.log");
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one->dumps, 1);
  EXPECT_EQ(one->skipped, 0);
  EXPECT_EQ(total_elements(*one), 13'379'136);
  auto merged = read_bcaffe_log(kBcaffe + "tmp8comm.log");
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  // Both dumps carry times; the first only lacks the merged column's values: take the last.
  EXPECT_EQ(merged->dumps, 2);
  EXPECT_EQ(merged->zero_dumps, 0);
  EXPECT_EQ(merged->skipped, 1);
  ASSERT_TRUE(merged->tensors[0].merged_allreduce_us.has_value());
  EXPECT_DOUBLE_EQ(*merged->tensors[0].merged_allreduce_us, 1231);
}

TEST(BcaffeLog, EveryRealFileParses) {
  for (const char* f : {"tmpcomm.log", "tmp2comm.log", "tmp4comm.log", "tmp4ocomm.log",
                        "tmp8comm.log", "tmp8ocomm.log"}) {
    auto log = read_bcaffe_log(kBcaffe + f);
    ASSERT_TRUE(log.ok()) << log.error().message;
    EXPECT_EQ(log->tensors.size(), 128u) << f;
    EXPECT_EQ(total_elements(*log), 13'379'136) << f;
  }
}

TEST(BcaffeLog, BadRecordsNameFileAndLine) {
  const std::string p = "I0207 16:23:08.165047 35803 distributed.cpp:112] ";
  struct Case {
    std::string text, expect;
  };
  const Case cases[] = {
      {p + "[0, 10, 1, 2]\n" + p + "[1, x, 1, 2]\n", "line 2: 'x' is not a number"},
      {p + "[0, 10, 1, 2]\n" + p + "[2, 10, 1, 2]\n", "line 2: param_id 2 follows 0"},
      {p + "[0, 10, 1]\n", "line 1: expected [param_id"},
      {p + "[0, 10, 1, 2\n", "line 1: tensor record does not end"},
      {p + "[3, 10, 1, 2]\n", "line 1: param_id 3 before param 0"},
      {p + "[0, 10, 0, 0]\n" + p + "[1, 10, 0, 0]\n", "all 1 dumps are all zeros"},
      {p + "[0, 10, -1, 2]\n", "line 1: field 3 is negative"},
  };
  for (const auto& c : cases) {
    auto log = parse_bcaffe_log(c.text, "x.log");
    ASSERT_FALSE(log.ok()) << c.text;
    EXPECT_NE(log.error().message.find("b-caffe log 'x.log': " + c.expect), std::string::npos)
        << log.error().message;
  }
  // Other glog lines are counted, not fatal.
  auto ok = parse_bcaffe_log("I0207 solver.cpp:10] Iteration 5\n" + p + "[0, 10, 1, 2]\n", "y");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->ignored_lines, 1);
}

}  // namespace
}  // namespace dagsgd::trace
