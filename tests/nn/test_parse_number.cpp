// nn/parse_number.h: the whole text is one number of the type, or nothing; the same on every
// platform and in every locale.
#include "nn/parse_number.h"

#include <clocale>
#include <cstdint>
#include <limits>

#include "tests/support/testing.h"

namespace sg::nn {
namespace {

TEST(SerializeParseNumber, ReadsTheWholeTextAsOneNumber) {
  EXPECT_EQ(parse_number<int64_t>("42"), 42);
  EXPECT_EQ(parse_number<int64_t>("-7"), -7);
  EXPECT_EQ(parse_number<uint64_t>("18446744073709551615"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(parse_number<double>("0.1"), 0.1);
  EXPECT_EQ(parse_number<double>("1e-9"), 1e-9);
  EXPECT_EQ(parse_number<double>("-2.5"), -2.5);
  EXPECT_EQ(parse_number<float>("0.25"), 0.25f);
}

TEST(SerializeParseNumber, RefusesAnythingElse) {
  for (const char* bad : {"", " 1", "1 ", "1x", "x", "-", "1.5.2", "0x10", "--1"}) {
    EXPECT_FALSE(parse_number<int64_t>(bad).has_value()) << "'" << bad << "'";
    EXPECT_FALSE(parse_number<double>(bad).has_value()) << "'" << bad << "'";
  }
  EXPECT_FALSE(parse_number<int64_t>("1.5").has_value());
  EXPECT_FALSE(parse_number<int64_t>("99999999999999999999").has_value());  // out of range
  EXPECT_FALSE(parse_number<uint64_t>("-1").has_value());
  EXPECT_FALSE(parse_number<double>("1e999").has_value());
  EXPECT_FALSE(parse_number<double>("nan").has_value());
  EXPECT_FALSE(parse_number<double>("inf").has_value());
  for (const char* bad : {".", "1e", "1e+", "e5", "+", "1..", "0x1p3", "infinity", "1,5"})
    EXPECT_FALSE(parse_number<double>(bad).has_value()) << "'" << bad << "'";
  EXPECT_EQ(parse_number<double>(".5"), 0.5);
  EXPECT_EQ(parse_number<double>("5."), 5.0);
  EXPECT_EQ(parse_number<double>("+2E+2"), 200.0);
}

// A program that sets a locale whose decimal point is a comma still reads "0.5" (and not "0,5").
TEST(SerializeParseNumber, TheProgramsLocaleDoesNotChangeIt) {
  const char* german = std::setlocale(LC_NUMERIC, "de_DE.UTF-8");
  EXPECT_EQ(parse_number<double>("0.5"), 0.5);
  EXPECT_FALSE(parse_number<double>("0,5").has_value());
  if (german != nullptr) std::setlocale(LC_NUMERIC, "C");
}

}  // namespace
}  // namespace sg::nn
