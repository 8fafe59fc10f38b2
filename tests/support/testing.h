// Shared test helpers: tensor comparisons with readable failures, and gradcheck as an assertion.
//
//   EXPECT_TRUE(sg::testing::tensors_near(actual, expected, 1e-6));
//   EXPECT_GRADCHECK([](const auto& in) { return sg::exp(in[0]); }, {x});
//   EXPECT_GRADGRADCHECK([](const auto& in) { return sg::exp(in[0]); }, {x});
//   EXPECT_SG_ERROR(sg::matmul(a, b), "matmul: shapes [2, 3] and [4, 5]");
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/autograd.h"

namespace sg::testing {

// Same shape, and |a - e| <= atol + rtol * |e| everywhere (NaNs must match NaNs).
::testing::AssertionResult tensors_near(const Tensor& actual, const Tensor& expected,
                                        double atol = 1e-6, double rtol = 1e-5);
// Same shape and exactly equal values (bool and int64 tensors, indices).
::testing::AssertionResult tensors_equal(const Tensor& actual, const Tensor& expected);

::testing::AssertionResult gradcheck_passes(const GradcheckFn& fn,
                                            const std::vector<Tensor>& inputs,
                                            const GradcheckOptions& options = {});

// Second derivatives (gradgradcheck), as an assertion.
::testing::AssertionResult gradgradcheck_passes(const GradcheckFn& fn,
                                                const std::vector<Tensor>& inputs,
                                                const GradcheckOptions& options = {});

// A float64 leaf that requires grad, filled from a fixed seed.
Tensor random_leaf(const Shape& shape, uint64_t seed = 0, double scale = 1.0);

// The CPU feature levels the fast kernels can run at on this machine (cpu_features.h), from the
// portable paths (AVX2, or generic where the CPU has no AVX2) up to what the CPU has.
std::vector<CpuFeatures> cpu_feature_levels();

// Runs fn once at every level of cpu_feature_levels() (capped with CpuFeaturesGuard), with the
// level in the failure messages: a kernel test then checks the AVX-512 path and the portable one
// on an AVX-512 machine.
template <typename Fn>
void at_every_cpu_feature_level(Fn&& fn) {
  for (const CpuFeatures level : cpu_feature_levels()) {
    CpuFeaturesGuard cap(level);
    SCOPED_TRACE(std::string("cpu features: ") + std::string(cpu_features_name(level)));
    fn();
  }
}

}  // namespace sg::testing

// 1 in a build with AddressSanitizer: GCC says so with __SANITIZE_ADDRESS__, Clang (16) only
// through __has_feature. Tests of out-of-memory paths skip there (ASan reserves terabytes of
// address space and aborts where malloc would fail).
#if defined(__SANITIZE_ADDRESS__)
#define SG_TEST_WITH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SG_TEST_WITH_ASAN 1
#endif
#endif
#ifndef SG_TEST_WITH_ASAN
#define SG_TEST_WITH_ASAN 0
#endif

#define EXPECT_GRADCHECK(fn, ...) EXPECT_TRUE(::sg::testing::gradcheck_passes(fn, __VA_ARGS__))
#define EXPECT_GRADGRADCHECK(fn, ...) \
  EXPECT_TRUE(::sg::testing::gradgradcheck_passes(fn, __VA_ARGS__))

// Asserts that `statement` throws sg::Error whose message contains `substring`.
#define EXPECT_SG_ERROR(statement, substring)                                          \
  do {                                                                                 \
    try {                                                                              \
      (void)(statement);                                                               \
      ADD_FAILURE() << "expected sg::Error containing \"" << (substring) << "\" from " \
                    << #statement;                                                     \
    } catch (const ::sg::Error& sg_error_) {                                           \
      EXPECT_NE(std::string(sg_error_.what()).find(substring), std::string::npos)      \
          << "message was: " << sg_error_.what();                                      \
    }                                                                                  \
  } while (false)
