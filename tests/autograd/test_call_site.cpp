// Errors name the user's call (autograd/call_site.h): an op's shape error, a C++ operator's, and
// an error thrown inside an op that other ops make, each ends with this file and the line of the
// call, with or without anomaly mode.
#include <string>

#include "tests/support/testing.h"

namespace sg {
namespace {

// The message of the sg::Error that `fn` throws ("" if none).
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// " (at tests/autograd/test_call_site.cpp:LINE)" for a line of this file.
std::string at_line(int line) {
  return fmt::format(" (at tests/autograd/test_call_site.cpp:{})", line);
}

TEST(CallSiteErrors, AnOpsShapeErrorEndsWithTheCallersLine) {
  const Tensor a = zeros({2, 3}), b = zeros({4, 5});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { return matmul(a, b); });
  EXPECT_TRUE(message.starts_with("matmul: shapes [2, 3] and [4, 5] cannot be multiplied"))
      << message;
  EXPECT_TRUE(message.ends_with(at_line(line))) << message;
}

TEST(CallSiteErrors, OperatorsNameTheLineTheyAreWrittenOn) {
  const Tensor a = zeros({2, 3}), b = zeros({4});
  int line = __LINE__ + 1;
  std::string message = error_of([&] { return a / b; });
  EXPECT_TRUE(message.starts_with("div: shapes [2, 3] and [4] cannot be broadcast")) << message;
  EXPECT_TRUE(message.ends_with(at_line(line))) << message;
  line = __LINE__ + 1;
  message = error_of([&] { return -a + b; });  // the + fails; its operand says where
  EXPECT_TRUE(message.ends_with(at_line(line))) << message;
  line = __LINE__ + 1;
  message = error_of([&] { return 2.0 * a < b; });
  EXPECT_TRUE(message.starts_with("lt: ")) << message;
  EXPECT_TRUE(message.ends_with(at_line(line))) << message;
}

// An op that runs other ops (cross_entropy's checks, fused_linear through matmul) reports the
// user's call once, not its own files.
TEST(CallSiteErrors, AnOpMadeOfOpsReportsTheOutermostCallOnce) {
  const Tensor w = zeros({4, 3}), x = zeros({2, 5});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { return fused_linear(x, w); });
  EXPECT_TRUE(message.starts_with("fused_linear: input of shape [2, 5]")) << message;
  EXPECT_TRUE(message.ends_with(at_line(line))) << message;
  EXPECT_EQ(message.find(" (at "), message.rfind(" (at ")) << "the site twice: " << message;
}

// Outside any op (a check in user code, a kernel's own): no site is invented.
TEST(CallSiteErrors, AnErrorOutsideAnyOpHasNoSite) {
  const std::string message = error_of([] { SG_FAIL("mine: a message"); });
  EXPECT_EQ(message, "mine: a message");
}

// In anomaly mode, a NaN made by an operator is reported at the operator's line.
TEST(CallSiteErrors, AnomalyInAnOperatorNamesItsLine) {
  DetectAnomalyGuard anomaly;
  const Tensor zero = zeros({2}).requires_grad_(true);
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { return zero / zero; });
  EXPECT_TRUE(message.starts_with("anomaly: 'div' produced")) << message;
  EXPECT_NE(message.find(fmt::format("test_call_site.cpp:{}", line)), std::string::npos) << message;
}

}  // namespace
}  // namespace sg
