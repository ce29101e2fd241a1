// config_from_flags(): every numeric flag of `dagsgd train` is finite, in range, and named in
// the one-line error; nothing trains forever by accident.
#include <gtest/gtest.h>

#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

#include "dagsgd/runtime/train_config.h"

namespace dagsgd::runtime {
namespace {

// The error for one flag set to `value` (empty when accepted).
std::string error_for(std::string TrainFlags::*flag, const std::string& value) {
  TrainFlags f;
  f.*flag = value;
  auto c = config_from_flags(f);
  return c.ok() ? "" : c.error().message;
}

// One flag set to one value, and the error it gets.
struct FlagCase {
  std::string TrainFlags::*flag;
  const char* value;
  const char* error;
};

void expect_errors(std::initializer_list<FlagCase> cases) {
  for (const FlagCase& c : cases) EXPECT_EQ(error_for(c.flag, c.value), c.error) << c.value;
}

TEST(TrainFlags, RejectsWhatWouldTrainForeverOrOverflow) {
  expect_errors(
      {{&TrainFlags::iterations, "0", "--iterations: '0' is out of range (1..9223372036854775807)"},
       {&TrainFlags::iterations, "-3",
        "--iterations: '-3' is out of range (1..9223372036854775807)"},
       {&TrainFlags::iterations, "99999999999999999999",
        "--iterations: '99999999999999999999' is out of range (1..9223372036854775807)"},
       {&TrainFlags::epochs, "0", "--epochs: '0' is out of range (1..1000000)"},
       {&TrainFlags::epochs, "2000000000", "--epochs: '2000000000' is out of range (1..1000000)"},
       {&TrainFlags::epochs, "1e3", "--epochs: '1e3' is not an integer"},
       {&TrainFlags::batch, "0", "--batch: '0' is out of range (1..65536)"}});
  EXPECT_NE(error_for(&TrainFlags::sync, "easgd:99999999999,0.5").find("TAU in 1..1000000"),
            std::string::npos);
  EXPECT_NE(error_for(&TrainFlags::overlap, "bucket:inf").find("positive number of MiB"),
            std::string::npos);
}

TEST(TrainFlags, RealsMustBeFiniteAndInRange) {
  expect_errors({{&TrainFlags::lr, "inf", "--lr: 'inf' is not a finite number"},
                 {&TrainFlags::lr, "nan", "--lr: 'nan' is not a finite number"},
                 {&TrainFlags::lr, "-0.1", "--lr: '-0.1' must be positive"},
                 {&TrainFlags::lr, "0", "--lr: '0' must be positive"},
                 {&TrainFlags::lr, "0.1x", "--lr: '0.1x' is not a finite number"},
                 {&TrainFlags::momentum, "nan", "--momentum: 'nan' is not a finite number"},
                 {&TrainFlags::momentum, "1", "--momentum: '1' must be in [0, 1)"},
                 {&TrainFlags::topk, "nan", "--topk: 'nan' is not a finite number"},
                 {&TrainFlags::topk, "1.5", "--topk: '1.5' must be in (0, 1]"}});
}

TEST(TrainFlags, AcceptsTheWholeRange) {
  const std::pair<std::string TrainFlags::*, const char*> accepted[] = {
      {&TrainFlags::seed, "5"},
      {&TrainFlags::seed, "18446744073709551615"},
      {&TrainFlags::iterations, "1"},
      {&TrainFlags::lr, "1e-3"},
      {&TrainFlags::warmup, "0"}};
  for (const auto& [flag, value] : accepted) EXPECT_EQ(error_for(flag, value), "") << value;
  EXPECT_EQ(error_for(&TrainFlags::seed, "-1"), "--seed: '-1' is not an integer");
  TrainFlags f;
  f.seed = "18446744073709551615";
  f.iterations = "7";
  auto c = config_from_flags(f);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->seed, 18446744073709551615ULL);
  EXPECT_EQ(c->iterations, 7);
  EXPECT_EQ(c->epochs, kUnlimitedEpochs);  // --iterations alone: as many epochs as it takes
}

TEST(TrainFlags, ValidateRejectsNanSetInCode) {
  TrainConfig c;
  c.momentum = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(validate(c).ok());
  c = TrainConfig{};
  c.lr = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(validate(c).ok());
  c = TrainConfig{};
  c.easgd_tau = 0;
  EXPECT_FALSE(validate(c).ok());
}

}  // namespace
}  // namespace dagsgd::runtime
