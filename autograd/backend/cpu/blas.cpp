// OpenBLAS core detection and threads (autograd/blas.h). With gemm.cpp, the only file that
// talks to OpenBLAS directly.
#include <cblas.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <string_view>

#include "autograd/blas.h"
#include "autograd/error.h"

namespace sg {

std::string blas_core_name() { return openblas_get_corename(); }

std::string blas_recommended_core() {
  // Kernel families older than Haswell: SSE-only or AVX1. On a CPU with AVX2/AVX-512 they are slow.
  static constexpr std::array<std::string_view, 9> kSlowCores = {
      "Prescott", "Core2",       "Penryn", "Dunnington", "Nehalem",
      "Atom",     "Sandybridge", "Katmai", "Unknown"};
  std::string core = blas_core_name();
  bool slow = false;
  for (std::string_view c : kSlowCores) slow = slow || core.find(c) != std::string::npos;
  if (!slow) return "";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
  if (__builtin_cpu_supports("avx2")) return "Haswell";
  return "";
}

void ensure_fast_blas(int /*argc*/, char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;  // the user (or we) already chose
  std::string core = blas_recommended_core();
  if (core.empty()) return;
  const char* no_reexec = std::getenv("SCRATCHGRAD_NO_REEXEC");
  if (no_reexec != nullptr && std::string_view(no_reexec) == "1") {
    warn_once_if_blas_is_slow();
    return;
  }
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  execv("/proc/self/exe", argv);  // returns only on failure
  warn_once_if_blas_is_slow();
}

void warn_once_if_blas_is_slow() {
  static bool warned = false;
  if (warned) return;
  warned = true;
  std::string core = blas_recommended_core();
  if (core.empty()) return;
  fmt::print(stderr,
             "scratchgrad: OpenBLAS is using its slow '{}' kernels on this CPU; run with "
             "OPENBLAS_CORETYPE={} for 5-10x faster matmul\n",
             blas_core_name(), core);
}

void set_blas_threads(int threads) {
  SG_CHECK(threads >= 1, "set_blas_threads: threads must be >= 1, got {}", threads);
  openblas_set_num_threads(threads);
}

int blas_threads() { return openblas_get_num_threads(); }

}  // namespace sg
