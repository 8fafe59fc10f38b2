// CPU feature detection and the cap on it (cpu_features.h). This file is compiled for the
// compiler's baseline, never with the kernels' -march, so that it runs on any CPU and can say
// clearly why the kernels cannot.
#include "autograd/cpu_features.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "autograd/error.h"

namespace sg {

namespace {

CpuFeatures detect() {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the operating system saves the wider registers.
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    return CpuFeatures::Generic;
  }
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl")) {
    return CpuFeatures::Avx2;
  }
  if (!__builtin_cpu_supports("avx512bf16")) return CpuFeatures::Avx512;
  return CpuFeatures::Avx512Bf16;
#else
  return CpuFeatures::Generic;  // ARM64 and others: the portable kernels
#endif
}

// The cap, from SCRATCHGRAD_CPU_FEATURES on first use; no cap by default.
std::atomic<CpuFeatures>& cap() {
  static std::atomic<CpuFeatures> chosen = [] {
    const char* env = std::getenv("SCRATCHGRAD_CPU_FEATURES");
    if (env == nullptr || *env == '\0') return CpuFeatures::Avx512Bf16;
    try {
      return parse_cpu_features(env);
    } catch (const Error&) {
      SG_FAIL("SCRATCHGRAD_CPU_FEATURES: expected generic, avx2, avx512 or avx512_bf16, got '{}'",
              env);
    }
  }();
  return chosen;
}

// The level this build's kernels need (CMake passes SG_KERNELS_NEED_LEVEL from
// SCRATCHGRAD_CPU_ARCH: 1 for x86-64-v3, 2 for x86-64-v4; 0 for the compiler's baseline).
#ifndef SG_KERNELS_NEED_LEVEL
#define SG_KERNELS_NEED_LEVEL 0
#endif
constexpr auto kKernelsNeed = static_cast<CpuFeatures>(SG_KERNELS_NEED_LEVEL);

// Said once as the library loads, before any kernel can run an instruction this CPU lacks (an
// illegal instruction would end the program with no word of why); the CPU backend then refuses
// every op with the same message (backend.cpp).
[[gnu::constructor(101)]] void warn_if_the_kernels_cannot_run() {
  const std::string reason = cpu_kernels_unsupported_reason(detect());
  if (!reason.empty()) std::fprintf(stderr, "scratchgrad: %s\n", reason.c_str());
}

}  // namespace

CpuFeatures detected_cpu_features() {
  static const CpuFeatures detected = detect();
  return detected;
}

CpuFeatures cpu_features() {
  const CpuFeatures detected = detected_cpu_features(), limit = cap().load();
  return limit < detected ? limit : detected;
}

void set_cpu_features(CpuFeatures limit) { cap().store(limit); }

std::string_view cpu_features_name(CpuFeatures features) {
  switch (features) {
    case CpuFeatures::Generic:
      return "generic";
    case CpuFeatures::Avx2:
      return "avx2";
    case CpuFeatures::Avx512:
      return "avx512";
    case CpuFeatures::Avx512Bf16:
      return "avx512_bf16";
  }
  return "unknown";
}

CpuFeatures parse_cpu_features(std::string_view name) {
  for (const CpuFeatures f :
       {CpuFeatures::Generic, CpuFeatures::Avx2, CpuFeatures::Avx512, CpuFeatures::Avx512Bf16}) {
    if (name == cpu_features_name(f)) return f;
  }
  SG_FAIL("cpu features: expected generic, avx2, avx512 or avx512_bf16, got '{}'", name);
}

std::string cpu_kernels_unsupported_reason(CpuFeatures detected) {
  if (detected >= kKernelsNeed) return "";
  return fmt::format(
      "this build's CPU kernels need {} (compiled with -march={}), which this CPU does not have "
      "(it has {}); rebuild with -DSCRATCHGRAD_CPU_ARCH= (the compiler's baseline) or "
      "-DSCRATCHGRAD_CPU_ARCH=native",
      kKernelsNeed == CpuFeatures::Avx2 ? "AVX2 and FMA" : "AVX-512",
      kKernelsNeed == CpuFeatures::Avx2 ? "x86-64-v3" : "x86-64-v4", cpu_features_name(detected));
}

CpuFeaturesGuard::CpuFeaturesGuard(CpuFeatures limit) : saved_(cap().load()) {
  set_cpu_features(limit);
}
CpuFeaturesGuard::~CpuFeaturesGuard() { set_cpu_features(saved_); }

}  // namespace sg
