// The BLAS library's set-up (autograd/blas.h): what it detected, its threads, and OpenBLAS's core
// type. With gemm.cpp, the only file that talks to the BLAS directly (through blas_library.h).
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "autograd/backend/cpu/blas_library.h"
#include "autograd/blas.h"
#include "autograd/error.h"

namespace sg {

namespace {
// OPENBLAS_NUM_THREADS: what this project's scripts set for "the BLAS's threads" (one per test
// when tests run in parallel), whichever library it is; 0 when unset or not a positive number.
[[maybe_unused]] int threads_from_environment() {
  const char* env = std::getenv("OPENBLAS_NUM_THREADS");
  const int threads = env != nullptr ? std::atoi(env) : 0;
  return threads >= 1 ? threads : 0;
}
}  // namespace

#if defined(SCRATCHGRAD_BLAS_MKL)
namespace {
// MKL's default threading layer is Intel's OpenMP (libiomp5), which PyPI's mkl wheel does not
// bring; GNU's (libgomp) is on every Debian. Chosen once, before any product, unless the user
// chose with MKL_THREADING_LAYER.
[[maybe_unused]] const int mkl_threading_layer =
    std::getenv("MKL_THREADING_LAYER") ? -1 : mkl_set_threading_layer(MKL_THREADING_GNU);

// MKL reads MKL_NUM_THREADS (and OMP_NUM_THREADS) itself; without them, OPENBLAS_NUM_THREADS.
[[maybe_unused]] const bool mkl_threads_chosen = [] {
  if (std::getenv("MKL_NUM_THREADS") != nullptr || std::getenv("OMP_NUM_THREADS") != nullptr ||
      threads_from_environment() == 0)
    return false;
  mkl_set_num_threads(threads_from_environment());
  return true;
}();
}  // namespace
#endif

#if defined(SCRATCHGRAD_BLAS_BLIS)
namespace {
// BLIS runs on one thread unless told. Like OpenBLAS (and PyTorch), scratchgrad gives it every
// core unless the environment says otherwise: BLIS_NUM_THREADS (which BLIS reads itself), else
// OPENBLAS_NUM_THREADS.
[[maybe_unused]] const bool blis_threads_chosen = [] {
  if (std::getenv("BLIS_NUM_THREADS") != nullptr) return false;
  const int threads = threads_from_environment();
  bli_thread_set_num_threads(threads >= 1 ? threads
                                          : static_cast<int>(std::thread::hardware_concurrency()));
  return true;
}();
}  // namespace
#endif

std::string blas_library_name() {
#if defined(SCRATCHGRAD_BLAS_MKL)
  return "oneMKL";
#elif defined(SCRATCHGRAD_BLAS_BLIS)
  return "BLIS";
#elif defined(SCRATCHGRAD_BLAS_SCIPY_OPENBLAS)
  return "scipy-openblas";
#else
  return "OpenBLAS";
#endif
}

std::string blas_core_name() {
#if defined(SCRATCHGRAD_BLAS_IS_OPENBLAS)
  return openblas_get_corename();
#elif defined(SCRATCHGRAD_BLAS_BLIS)
  return bli_arch_string(bli_arch_query_id());  // the sub-configuration, e.g. "zen3", "skx"
#else
  // MKL picks its code path per call and does not name it (on a non-Intel CPU not even through
  // mkl_cbwr_get_auto_branch); its version says which MKL it is.
  MKLVersion version{};
  mkl_get_version(&version);
  return fmt::format("version {}.{}.{}, build {}", version.MajorVersion, version.MinorVersion,
                     version.UpdateVersion, version.Build);
#endif
}

std::string blas_recommended_core() {
#if defined(SCRATCHGRAD_BLAS_IS_OPENBLAS)
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
#endif
  return "";  // BLIS and MKL choose their kernels from the CPU's features, not its model
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
#if defined(SCRATCHGRAD_BLAS_IS_OPENBLAS)
  openblas_set_num_threads(threads);
#elif defined(SCRATCHGRAD_BLAS_BLIS)
  bli_thread_set_num_threads(threads);
#else
  mkl_set_num_threads(threads);
#endif
}

int blas_threads() {
#if defined(SCRATCHGRAD_BLAS_IS_OPENBLAS)
  return openblas_get_num_threads();
#elif defined(SCRATCHGRAD_BLAS_BLIS)
  const auto threads = bli_thread_get_num_threads();  // -1: never set, and BLIS then uses one
  return threads < 1 ? 1 : static_cast<int>(threads);
#else
  return mkl_get_max_threads();
#endif
}

}  // namespace sg
