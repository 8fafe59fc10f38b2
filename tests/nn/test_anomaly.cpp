// Anomaly mode (autograd/anomaly.h): the first NaN or Inf, forward or backward, is reported with
// the op, its inputs and the line of user code that called it.
#include <cstdlib>
#include <string>

#include "autograd/anomaly.h"
#include "autograd/autograd.h"
#include "nn/nn.h"
#include "tests/support/testing.h"

namespace {

using sg::Tensor;

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const sg::Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string here(int line) { return "tests/nn/test_anomaly.cpp:" + std::to_string(line); }

// A model whose third stage takes the log of a value that one bad weight makes negative.
struct LogModel : sg::nn::UnaryModule {
  LogModel() {
    first = register_module("first", std::make_shared<sg::nn::Linear>(4, 4));
    second = register_module("second", std::make_shared<sg::nn::Linear>(4, 3));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = sg::relu(first->forward(x));
    Tensor z = second->forward(h);
    log_line = __LINE__ + 1;
    return sg::log(z).sum();  // z < 0 somewhere: NaN
  }
  std::shared_ptr<sg::nn::Linear> first, second;
  int log_line = 0;
};

TEST(Anomaly, LogOfANegativeNumberDeepInAModelNamesTheOpAndTheLine) {
  sg::manual_seed(1);
  LogModel model;
  {
    sg::NoGradGuard no_grad;
    model.second->bias.fill_(-100.0);  // every z is negative
  }
  Tensor x = sg::randn({2, 4});
  {
    sg::DetectAnomalyGuard off(false);  // off (even under SCRATCHGRAD_DETECT_ANOMALY=1): a NaN loss
    EXPECT_TRUE(std::isnan(model.forward(x).item<float>()));
  }
  sg::DetectAnomalyGuard anomaly;
  std::string message = error_of([&] { model.forward(x); });
  EXPECT_NE(message.find("anomaly: 'log' produced NaN"), std::string::npos) << message;
  EXPECT_NE(message.find("inputs: float32 [2, 3]"), std::string::npos) << message;
  EXPECT_NE(message.find(here(model.log_line)), std::string::npos) << message;
  EXPECT_NE(message.find("LogModel::forward"), std::string::npos) << message;
}

TEST(Anomaly, TensorMethodsReportTheirCaller) {
  sg::DetectAnomalyGuard anomaly;
  Tensor x = sg::full({3}, -1.0);
  const int line = __LINE__ + 1;
  std::string message = error_of([&] { x.sqrt(); });
  EXPECT_NE(message.find("'sqrt' produced NaN (3 of 3 elements"), std::string::npos) << message;
  EXPECT_NE(message.find(here(line)), std::string::npos) << message;
}

TEST(Anomaly, AnOpInsideAnOpReportsTheOutermostCall) {
  // fused_linear runs matmul and add; the user's line is the fused_linear call.
  sg::DetectAnomalyGuard anomaly;
  Tensor x = sg::full({2, 3}, 1e30);
  Tensor w = sg::full({4, 3}, 1e30);
  std::string message = error_of([&] { sg::nn::linear(x, w); });
  EXPECT_NE(message.find("produced Inf"), std::string::npos) << message;
  EXPECT_NE(message.find("nn/linear.cpp"), std::string::npos)
      << "nn::linear is library code calling the op: " << message;
  const int fused_line = __LINE__ + 1;
  message = error_of([&] { sg::fused_linear(x, w); });
  EXPECT_NE(message.find(here(fused_line)), std::string::npos) << message;
}

// A custom function: y = x / x, whose hand-written backward computes 0/0.
Tensor ratio_with_bad_backward(const Tensor& x, int* line) {
  Tensor y = sg::full(x.shape(), 1.0);
  *line = __LINE__ + 1;
  return sg::record("ratio", y, {x}, [](const Tensor& g) {
    Tensor zero = g * 0.0;
    return sg::Grads{zero / zero};  // 0/0 = NaN
  });
}

TEST(Anomaly, ZeroOverZeroInACustomBackwardNamesTheNodeAndWhereItWasCreated) {
  Tensor x = sg::ones({2, 2}, sg::TensorOptions().requires_grad(true));
  int line = 0;
  {
    sg::DetectAnomalyGuard off(false);  // off: the NaN reaches x.grad() silently
    Tensor loss = ratio_with_bad_backward(x, &line).sum();
    loss.backward();
    EXPECT_TRUE(std::isnan(x.grad().sum().item<float>()));
  }
  sg::DetectAnomalyGuard anomaly;
  Tensor loss = ratio_with_bad_backward(x, &line).sum();
  std::string message = error_of([&] { loss.backward(); });
  EXPECT_NE(message.find("the backward of 'ratio' returned NaN"), std::string::npos) << message;
  EXPECT_NE(message.find("in the gradient of its input 0"), std::string::npos) << message;
  EXPECT_NE(message.find("inputs: float32 [2, 2]"), std::string::npos) << message;
  EXPECT_NE(message.find(here(line)), std::string::npos) << message;
  EXPECT_NE(message.find("ratio_with_bad_backward"), std::string::npos) << message;
}

TEST(Anomaly, ABackwardOfABuiltInOpNamesTheForwardCall) {
  // sqrt at 0: the forward is finite (0), the backward g / (2·0) is Inf.
  sg::DetectAnomalyGuard anomaly;
  Tensor x = sg::zeros({3}, sg::TensorOptions().requires_grad(true));
  const int line = __LINE__ + 1;
  Tensor loss = sg::sqrt(x).sum();
  std::string message = error_of([&] { loss.backward(); });
  EXPECT_NE(message.find("the backward of 'sqrt' returned Inf"), std::string::npos) << message;
  EXPECT_NE(message.find(here(line)), std::string::npos) << message;
}

TEST(Anomaly, TheEnvironmentVariableIsZeroOrOne) {
  // "false" used to turn anomaly mode on (anything but "" and "0" did).
  EXPECT_FALSE(sg::detail::detect_anomaly_setting(nullptr));
  EXPECT_FALSE(sg::detail::detect_anomaly_setting(""));
  EXPECT_FALSE(sg::detail::detect_anomaly_setting("0"));
  EXPECT_TRUE(sg::detail::detect_anomaly_setting("1"));
  EXPECT_SG_ERROR(sg::detail::detect_anomaly_setting("false"),
                  "SCRATCHGRAD_DETECT_ANOMALY must be 0 or 1, got 'false'");
  EXPECT_SG_ERROR(sg::detail::detect_anomaly_setting("yes\n"), "got 'yes\\x0a'");
}

TEST(Anomaly, FiniteRunsAreUnchangedAndTheGuardRestores) {
  EXPECT_FALSE(sg::is_anomaly_enabled() && std::getenv("SCRATCHGRAD_DETECT_ANOMALY") == nullptr);
  const bool before = sg::is_anomaly_enabled();
  sg::manual_seed(3);
  sg::nn::Linear layer(3, 2);
  Tensor x = sg::randn({4, 3});
  Tensor plain = layer.forward(x).tanh().sum();
  {
    sg::DetectAnomalyGuard anomaly;
    EXPECT_TRUE(sg::is_anomaly_enabled());
    Tensor checked = layer.forward(x).tanh().sum();
    checked.backward();
    EXPECT_EQ(checked.item<float>(), plain.item<float>());
    sg::DetectAnomalyGuard off(false);
    EXPECT_FALSE(sg::is_anomaly_enabled());
    EXPECT_TRUE(std::isinf(sg::log(sg::zeros({1})).item<float>()));  // off: no check
  }
  EXPECT_EQ(sg::is_anomaly_enabled(), before);
}

}  // namespace
