// The CPU-feature switch (autograd/cpu_features.h): names, the cap and its guard, the kernels'
// obedience to it, and the refusal of a CPU the build's kernels cannot run on.
#include "autograd/cpu_features.h"

#include <string>

#include "autograd/backend/cpu_fast/narrow_gemm.h"
#include "autograd/backend/cpu_fast/short_softmax.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

TEST(BackendCpuFeatures, NamesParseBackAndUnknownOnesAreRefused) {
  for (const CpuFeatures f :
       {CpuFeatures::Generic, CpuFeatures::Avx2, CpuFeatures::Avx512, CpuFeatures::Avx512Bf16}) {
    EXPECT_EQ(parse_cpu_features(cpu_features_name(f)), f);
  }
  EXPECT_SG_ERROR(parse_cpu_features("sse4"),
                  "cpu features: expected generic, avx2, avx512 or avx512_bf16, got 'sse4'");
}

// The cap limits what the kernels may use, never raises it, and the guard restores it.
TEST(BackendCpuFeatures, TheCapLimitsTheDetectedLevelAndTheGuardRestoresIt) {
  const CpuFeatures before = cpu_features();
  EXPECT_LE(before, detected_cpu_features());
  {
    CpuFeaturesGuard cap(CpuFeatures::Generic);
    EXPECT_EQ(cpu_features(), CpuFeatures::Generic);
    {
      CpuFeaturesGuard no_cap(CpuFeatures::Avx512Bf16);  // "no cap": the CPU's own level
      EXPECT_EQ(cpu_features(), detected_cpu_features());
    }
    EXPECT_EQ(cpu_features(), CpuFeatures::Generic);
  }
  EXPECT_EQ(cpu_features(), before);
}

// Below AVX-512 every register kernel declines, whatever the CPU: the portable paths run.
TEST(BackendCpuFeatures, TheAvx512KernelsDeclineBelowAvx512) {
  {
    CpuFeaturesGuard cap(CpuFeatures::Avx2);
    EXPECT_FALSE(cpu::short_softmax_fits(10));
    EXPECT_FALSE(cpu::narrow_gemm_fits(800, 32, 32));
  }
  // At the level the kernels may use now: the CPU's, unless SCRATCHGRAD_CPU_FEATURES caps it (the
  // avx2.* repeats of this suite run with the cap).
  if (cpu_features() >= CpuFeatures::Avx512) {
    EXPECT_TRUE(cpu::short_softmax_fits(10));
    EXPECT_TRUE(cpu::narrow_gemm_fits(800, 32, 32));
  }
}

// This machine runs the kernels (or no test would); a CPU below what they were compiled for is
// refused with the instruction set it lacks and the fix. (scripts/platforms.sh no-avx2 starts a
// program on an emulated CPU without AVX2 and checks the refusal end to end.)
TEST(BackendCpuFeatures, ACpuBelowTheKernelsLevelIsRefusedWithTheFix) {
  EXPECT_EQ(cpu_kernels_unsupported_reason(detected_cpu_features()), "");
  const std::string generic = cpu_kernels_unsupported_reason(CpuFeatures::Generic);
#if defined(__x86_64__)
  if (!generic.empty()) {  // the default build: kernels for x86-64-v3
    EXPECT_NE(generic.find("need AVX2 and FMA"), std::string::npos) << generic;
    EXPECT_NE(generic.find("-DSCRATCHGRAD_CPU_ARCH="), std::string::npos) << generic;
  }
#else
  EXPECT_EQ(generic, "");  // other architectures build for their baseline
#endif
}

}  // namespace
}  // namespace sg
