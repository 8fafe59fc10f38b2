// Tests for train/numbers.cpp: numbers parse in full or not at all, out-of-range text is an
// error (not a saturated value), booleans are true or false, and the command-line check.
#include "train/numbers.h"

#include <cmath>
#include <limits>

#include "tests/support/testing.h"

namespace sg::train {
namespace {

TEST(TrainNumbers, WholeTextOrAnErrorNamingIt) {
  EXPECT_EQ(parse_number<int64_t>("-12", "x"), -12);
  EXPECT_EQ(parse_number<uint64_t>("18446744073709551615", "seed"),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(parse_number<double>("2.5e-3", "lr"), 2.5e-3);
  EXPECT_SG_ERROR(parse_number<int64_t>("12abc", "'layers'"),
                  "'layers' = '12abc' is not an integer");
  EXPECT_SG_ERROR(parse_number<int64_t>("", "'layers'"), "'layers' = '' is not an integer");
  EXPECT_SG_ERROR(parse_number<int64_t>(" 1", "'layers'"), "is not an integer");
  EXPECT_SG_ERROR(parse_number<int64_t>("1.5", "'step'"), "'step' = '1.5' is not an integer");
  EXPECT_SG_ERROR(parse_number<double>("0.1 ", "'dropout'"), "'dropout' = '0.1 ' is not a number");
  EXPECT_SG_ERROR(parse_number<uint64_t>("-1", "'seed'", "a seed in [0, 2^64)"),
                  "'seed' = '-1' is not a seed in [0, 2^64)");
  // Too large for the type: refused, never saturated to the largest value.
  EXPECT_SG_ERROR(parse_number<int64_t>("99999999999999999999", "--steps"),
                  "--steps = '99999999999999999999' is not an integer: out of range");
  EXPECT_SG_ERROR(parse_number<uint64_t>("18446744073709551616", "'seed'"), "out of range");
  // A 1 MB value makes a short message.
  const std::string huge(1 << 20, '7');
  try {
    parse_number<int64_t>(huge + "x", "'v'");
    ADD_FAILURE() << "parsed";
  } catch (const sg::Error& e) {
    EXPECT_LT(std::string(e.what()).size(), 200u);
  }
}

TEST(TrainNumbers, BooleansAndRanges) {
  EXPECT_TRUE(parse_bool("true", "'norm_first'"));
  EXPECT_FALSE(parse_bool("false", "'norm_first'"));
  EXPECT_TRUE(parse_bool("1", "'norm_first'"));  // as older checkpoints wrote
  EXPECT_FALSE(parse_bool("0", "'norm_first'"));
  EXPECT_SG_ERROR(parse_bool("True", "'norm_first'"), "'norm_first' = 'True' is not true or false");
  EXPECT_SG_ERROR(parse_bool("", "'norm_first'"), "'norm_first' = '' is not true or false");
  EXPECT_NO_THROW(check_range<int64_t>("--layers", 64, 1, 64));
  EXPECT_SG_ERROR(check_range<int64_t>("--layers", 65, 1, 64),
                  "--layers must be in [1, 64], got 65");
  EXPECT_SG_ERROR(check_range("--dropout", std::nan(""), 0.0, 0.99),
                  "--dropout must be in [0, 0.99], got nan");
}

TEST(TrainNumbers, CommandLineCheckSeesTheTextBeforeConversion) {
  auto steps = number_in<int64_t>(0, 1000000000);
  std::string good = "1000", huge = "99999999999999999999", word = "ten", big = "2000000000";
  EXPECT_EQ(steps(good), "");
  EXPECT_EQ(steps(huge), "'99999999999999999999' is not an integer in [0, 1000000000]");
  EXPECT_EQ(steps(word), "'ten' is not an integer in [0, 1000000000]");
  EXPECT_EQ(steps(big), "'2000000000' is not an integer in [0, 1000000000]");
  auto rate = number_in<double>(0.0, 1.0);
  std::string nan = "nan", half = "0.5";
  EXPECT_EQ(rate(half), "");
  EXPECT_NE(rate(nan), "");
  auto probability = number_in(RealInterval{.lo = 0, .hi = 1, .hi_open = true});
  std::string one = "1", zero = "0";
  EXPECT_EQ(probability(zero), "");
  EXPECT_EQ(probability(one), "'1' is not a number in [0, 1)");
  EXPECT_NE(probability(nan), "");
}

TEST(TrainNumbers, AnIntervalMayLeaveOutEitherEnd) {
  const RealInterval lr{.lo = 0, .hi = 1, .lo_open = true};
  EXPECT_EQ(lr.text(), "(0, 1]");
  EXPECT_FALSE(lr.contains(0));
  EXPECT_TRUE(lr.contains(1));
  EXPECT_FALSE(lr.contains(std::nan("")));
  EXPECT_EQ((RealInterval{.lo = -1, .hi = 1, .lo_open = true, .hi_open = true}).text(), "(-1, 1)");
  EXPECT_EQ((RealInterval{.lo = 0, .hi = 1e30}).text(), "[0, 1e+30]");
  EXPECT_NO_THROW(check_range("--dropout", 0.0, RealInterval{.lo = 0, .hi = 1, .hi_open = true}));
  EXPECT_SG_ERROR(check_range("--dropout", 1.0, RealInterval{.lo = 0, .hi = 1, .hi_open = true}),
                  "--dropout must be in [0, 1), got 1");
}

}  // namespace
}  // namespace sg::train
