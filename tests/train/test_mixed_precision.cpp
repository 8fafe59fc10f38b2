// Tests for train/mixed_precision.cpp: the --bf16 note names why a machine runs the bfloat16
// products slowly (the reference kernels, or a CPU without AVX512-BF16), and is empty where the
// fast bfloat16 product runs.
#include "train/mixed_precision.h"

#include "autograd/cpu_features.h"
#include "autograd/cpu_kernels.h"
#include "tests/support/testing.h"

namespace sg::train {
namespace {

TEST(AutocastSpeedNote, NamesWhyTheProductsRunOnTheReferenceKernel) {
  const CpuKernelsGuard fast(CpuKernels::Fast);
  {
    const CpuFeaturesGuard avx2(CpuFeatures::Avx2);  // or below, on a CPU without AVX2 (ARM64)
    const std::string note = bfloat16_speed_note(kCPU);
    EXPECT_NE(note.find(cpu_features_name(cpu_features())), std::string::npos) << note;
    EXPECT_NE(note.find("AVX512-BF16"), std::string::npos) << note;
  }
  {
    const CpuKernelsGuard reference(CpuKernels::Reference);
    EXPECT_NE(bfloat16_speed_note(kCPU).find("reference CPU kernels"), std::string::npos);
  }
  if (cpu_features() == CpuFeatures::Avx512Bf16) {
    EXPECT_EQ(bfloat16_speed_note(kCPU), "");
  } else {
    EXPECT_NE(bfloat16_speed_note(kCPU), "");
  }
}

}  // namespace
}  // namespace sg::train
