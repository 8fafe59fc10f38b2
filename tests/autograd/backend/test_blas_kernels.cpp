// OpenBLAS's kernel family, chosen while the program runs (autograd/blas.h): set_blas_kernels
// switches families between products, a name OpenBLAS does not have is refused, and
// choose_fast_blas replaces slow kernels by the family the CPU's instruction set calls for,
// unless the user chose with OPENBLAS_CORETYPE.
#include <cstdlib>
#include <string>
#include <vector>

#include "autograd/blas.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

// The family in use now; the test's changes undone at its end.
class KernelsGuard {
 public:
  KernelsGuard() : saved_(blas_core_name()) {}
  ~KernelsGuard() { set_blas_kernels(saved_); }
  KernelsGuard(const KernelsGuard&) = delete;
  KernelsGuard& operator=(const KernelsGuard&) = delete;

 private:
  std::string saved_;
};

// A product that every kernel family must get right: [64, 48]·[48, 40] against float64.
void expect_products_right() {
  manual_seed(2);
  const Tensor a = randn({64, 48}), b = randn({48, 40});
  EXPECT_TRUE(testing::tensors_near(
      matmul(a, b), matmul(a.to(kFloat64), b.to(kFloat64)).to(kFloat32), 1e-4, 1e-4));
}

bool kernels_can_change() {
  if (blas_library_name() != "OpenBLAS") return false;
  try {
    set_blas_kernels(blas_core_name());
    return true;
  } catch (const Error&) {
    return false;
  }
}

TEST(BlasKernels, SetKernelsSwitchesTheFamilyBetweenProducts) {
  if (!kernels_can_change()) {
    GTEST_SKIP() << blas_library_name() << " cannot change its kernels while the program runs";
  }
  KernelsGuard restore;
#if defined(__x86_64__)
  const std::vector<const char*> families = {"Sandybridge", "Haswell", "Prescott"};
#elif defined(__aarch64__)
  const std::vector<const char*> families = {"cortexa57", "armv8"};
#else
  GTEST_SKIP() << "no kernel families known to this test on this architecture";
  const std::vector<const char*> families;
#endif
  for (const char* core : families) {
    set_blas_kernels(core);
    EXPECT_EQ(blas_core_name(), core);
    expect_products_right();
  }
}

TEST(BlasKernels, AFamilyOpenBlasDoesNotHaveIsRefusedAndChangesNothing) {
  if (!kernels_can_change()) {
    GTEST_SKIP() << blas_library_name() << " cannot change its kernels while the program runs";
  }
  const std::string before = blas_core_name();
  EXPECT_SG_ERROR(set_blas_kernels("Pentium4000"),
                  "set_blas_kernels: OpenBLAS has no kernel family 'Pentium4000'");
  EXPECT_EQ(blas_core_name(), before);
  expect_products_right();
}

// Slow kernels (the SSE3 family Debian's OpenBLAS 0.3.21 falls back to on CPUs it does not know)
// are replaced by the fast family for this CPU, in the running program.
TEST(BlasKernels, SlowKernelsAreReplacedByTheCpusFastFamily) {
  if (!kernels_can_change()) {
    GTEST_SKIP() << blas_library_name() << " cannot change its kernels while the program runs";
  }
#if !defined(__x86_64__)
  GTEST_SKIP() << "the slow kernel families (SSE3's, AVX1's) are x86-64's";
#endif
  KernelsGuard restore;
  set_blas_kernels("Prescott");
  const std::string recommended = blas_recommended_core();
  if (recommended.empty()) GTEST_SKIP() << "this CPU has neither AVX-512 nor AVX2";
  EXPECT_TRUE(recommended == "SkylakeX" || recommended == "Haswell") << recommended;
  const char* chosen = std::getenv("OPENBLAS_CORETYPE");
  EXPECT_TRUE(choose_fast_blas());
  if (chosen != nullptr && *chosen != '\0') {
    EXPECT_EQ(blas_core_name(), "Prescott") << "OPENBLAS_CORETYPE is the user's choice";
  } else {
    EXPECT_EQ(blas_core_name(), recommended);
  }
  expect_products_right();
}

}  // namespace
}  // namespace sg
