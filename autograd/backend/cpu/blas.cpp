// The BLAS library's set-up (autograd/blas.h): what it detected, its threads, and OpenBLAS's core
// type. With gemm.cpp, the only file that talks to the BLAS directly (through blas_library.h).
#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "autograd/backend/cpu/blas_library.h"
#include "autograd/backend/cpu_fast/parallel.h"
#include "autograd/blas.h"
#include "autograd/cpu_features.h"
#include "autograd/error.h"

#if defined(SCRATCHGRAD_BLAS_OPENBLAS) && defined(__ELF__)
// OpenBLAS built with DYNAMIC_ARCH (Debian's) chooses its kernel family once, as it loads, and
// exports the two functions of that choice: quit forgets it, init makes it anew from
// OPENBLAS_CORETYPE (or the CPU's model). Weak: null where the OpenBLAS has no such choice.
extern "C" [[gnu::weak]] void gotoblas_dynamic_init(void);
extern "C" [[gnu::weak]] void gotoblas_dynamic_quit(void);
#endif

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
  bli_thread_set_num_threads(threads >= 1 ? threads : cpu::available_cpus());
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
  // Detected, not capped: SCRATCHGRAD_CPU_FEATURES limits scratchgrad's kernels, not the BLAS's.
  if (detected_cpu_features() >= CpuFeatures::Avx512) return "SkylakeX";
  if (detected_cpu_features() >= CpuFeatures::Avx2) return "Haswell";
#endif
  return "";  // BLIS and MKL choose their kernels from the CPU's features, not its model
}

namespace {

std::string lower_case(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Chooses OpenBLAS's kernels anew from OPENBLAS_CORETYPE = core (gotoblas_dynamic_*, below);
// false where this library cannot.
bool choose_openblas_kernels(const std::string& core) {
#if defined(SCRATCHGRAD_BLAS_OPENBLAS) && defined(__ELF__)
  if (gotoblas_dynamic_init == nullptr || gotoblas_dynamic_quit == nullptr) return false;
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = user != nullptr ? user : "";
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  if (user != nullptr) {  // the environment as it was: child processes choose for themselves
    setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  } else {
    unsetenv("OPENBLAS_CORETYPE");
  }
  return true;
#else
  (void)core;
  return false;
#endif
}

}  // namespace

void set_blas_kernels(std::string_view core) {
  const std::string before = blas_core_name();
  SG_CHECK(choose_openblas_kernels(std::string(core)),
           "set_blas_kernels: {} cannot change its kernels while the program runs (only OpenBLAS "
           "built with DYNAMIC_ARCH can, as Debian's is); set OPENBLAS_CORETYPE={} in the "
           "environment before the program starts instead",
           blas_library_name(), core);
  if (lower_case(blas_core_name()) != lower_case(core)) {
    choose_openblas_kernels(before);
    SG_FAIL("set_blas_kernels: OpenBLAS has no kernel family '{}' for this CPU (it keeps '{}')",
            core, before);
  }
}

bool choose_fast_blas() {
  const char* chosen = std::getenv("OPENBLAS_CORETYPE");
  if (chosen != nullptr && *chosen != '\0') return true;  // the user chose
  const std::string core = blas_recommended_core();
  if (core.empty()) return true;  // fast already, or nothing better to choose
  return choose_openblas_kernels(core) && lower_case(blas_core_name()) == lower_case(core);
}

void choose_fast_blas_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string before = blas_core_name();
    if (choose_fast_blas()) return;
    fmt::print(stderr,
               "scratchgrad: OpenBLAS is using its slow '{}' kernels on this CPU and cannot change "
               "them while the program runs; start it with OPENBLAS_CORETYPE={} in the "
               "environment for 5-10x faster matmul\n",
               before, blas_recommended_core());
  });
}

void set_blas_threads(int threads) {
  SG_CHECK(threads >= 1 && threads <= cpu::kMaxThreads,
           "set_blas_threads: threads must be from 1 to {}, got {}", cpu::kMaxThreads, threads);
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
