// Which instruction sets the fast CPU kernels may use. The kernels that use AVX-512 (short rows,
// register-tiled products, transposes) or AVX512-BF16 (bfloat16 products) check cpu_features()
// at run time and take their portable path on a CPU without them, so one build runs everywhere.
//
// SCRATCHGRAD_CPU_FEATURES=avx2 (or generic, avx512, avx512_bf16) in the environment caps the
// level at start-up, and set_cpu_features / CpuFeaturesGuard change the cap at run time: the
// tests run the fast kernels' portable paths on any machine this way, against the reference. A
// cap above what the CPU has changes nothing (the level is never more than the CPU runs).
#pragma once

#include <string>
#include <string_view>

namespace sg {

// Ordered: each level includes the ones before it.
enum class CpuFeatures {
  Generic,     // no explicit vector kernels (any CPU; on x86-64, AVX2 and FMA are not assumed)
  Avx2,        // AVX2 and FMA (x86-64-v3: Intel since 2013, AMD since 2015)
  Avx512,      // AVX-512 F, BW and VL (Intel Skylake-SP and later, AMD Zen 4 and later)
  Avx512Bf16,  // and AVX512-BF16 (vdpbf16ps: Intel Cooper Lake, Sapphire Rapids; AMD Zen 4)
};

// What this CPU runs (and its operating system enables), detected once.
CpuFeatures detected_cpu_features();
// What the fast kernels may use now: the detected level, capped by SCRATCHGRAD_CPU_FEATURES
// (read on first use; an unknown value is a clear error) or set_cpu_features.
CpuFeatures cpu_features();
// Caps the level for the kernels that run afterwards (CpuFeatures::Avx512Bf16 removes the cap).
void set_cpu_features(CpuFeatures cap);

// "generic", "avx2", "avx512", "avx512_bf16", and back; parse_cpu_features throws for any other.
std::string_view cpu_features_name(CpuFeatures features);
CpuFeatures parse_cpu_features(std::string_view name);

// Why this build's CPU kernels cannot run on a CPU with `detected` features ("" when they can):
// on x86-64 they are compiled for x86-64-v3 (AVX2 and FMA) by default (SCRATCHGRAD_CPU_ARCH).
std::string cpu_kernels_unsupported_reason(CpuFeatures detected);

// Caps the features for a scope and restores the previous cap at its end.
class CpuFeaturesGuard {
 public:
  explicit CpuFeaturesGuard(CpuFeatures cap);
  ~CpuFeaturesGuard();
  CpuFeaturesGuard(const CpuFeaturesGuard&) = delete;
  CpuFeaturesGuard& operator=(const CpuFeaturesGuard&) = delete;

 private:
  CpuFeatures saved_;
};

}  // namespace sg
