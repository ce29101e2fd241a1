// Numbers read from text inside a range (model::parse_number): the whole text a number, NaN
// never in range, and one message for what was expected.
#include <gtest/gtest.h>

#include "dagsgd/model/number_range.h"

namespace dagsgd::model {
namespace {

TEST(NumberRange, TheWholeTextInsideTheRange) {
  EXPECT_EQ(*parse_number("0.25", fraction_range()), 0.25);
  EXPECT_EQ(*parse_number("1", fraction_range()), 1.0);
  EXPECT_EQ(*parse_number("0", duration_seconds_range(true)), 0.0);
  EXPECT_EQ(*parse_number("1048576", worker_count_range()), 1048576.0);
  for (const char* bad : {"", "nan", "inf", "2x", "1.5e400"}) {
    EXPECT_FALSE(parse_number(bad, positive_finite_range()).ok()) << "'" << bad << "'";
  }
  EXPECT_FALSE(parse_number("0", duration_seconds_range(false)).ok());
  EXPECT_FALSE(parse_number("2e6", duration_seconds_range(true)).ok());
  EXPECT_FALSE(parse_number("1.5", worker_count_range()).ok());
  EXPECT_FALSE(parse_number("1048577", worker_count_range()).ok());
  EXPECT_FALSE(parse_number("-0.1", fraction_range()).ok());
}

TEST(NumberRange, SaysWhatWasExpectedAndWhatCame) {
  auto r = parse_number("1.5", worker_count_range());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "must be a whole number from 1 to 1048576 (2^20, the most workers the cost models "
            "take), got '1.5'");
  EXPECT_EQ(parse_number("0", whole_number_range(1, 65536)).error().message,
            "must be a whole number from 1 to 65536, got '0'");
  EXPECT_EQ(*parse_number("65536", whole_number_range(1, 65536)), 65536.0);
  // A whole number is digits: not an exponent, a fraction or a space, though their value is whole.
  for (const char* text : {"1e3", "64.0", " 64", "+", ""}) {
    EXPECT_FALSE(parse_number(text, whole_number_range(1, 65536)).ok()) << text;
  }
  EXPECT_EQ(*parse_number("+64", whole_number_range(1, 65536)), 64.0);
  NumberRange custom{.min = 2, .max = 4, .expected = "2, 3 or 4"};
  custom.whole = true;
  EXPECT_EQ(parse_number("5", custom).error().message, "must be 2, 3 or 4, got '5'");
}

}  // namespace
}  // namespace dagsgd::model
