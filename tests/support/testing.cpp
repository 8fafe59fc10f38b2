#include "tests/support/testing.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace sg::testing {

::testing::AssertionResult tensors_near(const Tensor& actual, const Tensor& expected, double atol,
                                        double rtol) {
  if (actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure() << fmt::format("shapes differ: actual {} vs expected {}",
                                                        actual.shape(), expected.shape());
  }
  std::vector<double> a = actual.to_vector<double>();
  std::vector<double> e = expected.to_vector<double>();
  int bad = 0;
  double worst = 0, max_abs = 0;
  std::string detail;
  for (size_t i = 0; i < a.size(); ++i) {
    bool both_nan = std::isnan(a[i]) && std::isnan(e[i]);
    bool same_inf = std::isinf(a[i]) && a[i] == e[i];
    double err = std::abs(a[i] - e[i]);
    if (!both_nan && !same_inf) max_abs = std::max(max_abs, std::isnan(err) ? INFINITY : err);
    if (both_nan || same_inf || err <= atol + rtol * std::abs(e[i])) continue;
    if (std::isnan(err)) err = INFINITY;
    worst = std::max(worst, err);
    if (bad++ < 5) detail += fmt::format("\n  [{}] actual {:.9g} expected {:.9g}", i, a[i], e[i]);
  }
  // SG_REPORT_ERRORS=1 prints every comparison's largest error (for the golden-error tables).
  static const bool report = std::getenv("SG_REPORT_ERRORS") != nullptr;
  if (report) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    fmt::print("max-error {}.{} {:.3g} over {} elements\n", info ? info->test_suite_name() : "?",
               info ? info->name() : "?", max_abs, a.size());
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << fmt::format("{} of {} elements differ (max error {:.3g}, atol {}, rtol {}):{}", bad,
                        a.size(), worst, atol, rtol, detail);
}

::testing::AssertionResult tensors_equal(const Tensor& actual, const Tensor& expected) {
  return tensors_near(actual, expected, 0.0, 0.0);
}

::testing::AssertionResult gradcheck_passes(const GradcheckFn& fn,
                                            const std::vector<Tensor>& inputs,
                                            const GradcheckOptions& options) {
  GradcheckResult r = gradcheck(fn, inputs, options);
  if (r.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.report;
}

::testing::AssertionResult gradgradcheck_passes(const GradcheckFn& fn,
                                                const std::vector<Tensor>& inputs,
                                                const GradcheckOptions& options) {
  GradcheckResult r = gradgradcheck(fn, inputs, options);
  if (r.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.report;
}

Tensor random_leaf(const Shape& shape, uint64_t seed, double scale) {
  Generator gen(seed);
  Tensor t = randn(shape, gen, kFloat64);
  if (scale != 1.0) {
    NoGradGuard no_grad;
    t.mul_(scale);
  }
  return t.requires_grad_(true);
}

std::vector<CpuFeatures> cpu_feature_levels() {
  const CpuFeatures detected = detected_cpu_features();
  std::vector<CpuFeatures> levels;
  for (auto level = std::min(CpuFeatures::Avx2, detected); level <= detected;
       level = static_cast<CpuFeatures>(static_cast<int>(level) + 1)) {
    levels.push_back(level);
  }
  return levels;
}

}  // namespace sg::testing
