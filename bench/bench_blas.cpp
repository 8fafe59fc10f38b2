// Which BLAS? Several libraries' cblas_sgemm on the products the copy-task Transformer runs, in one
// process, call after call, so that every library sees the same machine.
//
// Each library is loaded with dlopen from a path (name=path, or name=path:prefix when its symbols
// carry a prefix, as scipy-openblas32's scipy_cblas_sgemm): no rebuild per library. The shapes are
// the annotated and medium presets' linear layers, forward and both backward products, in the
// layouts scratchgrad calls them with (row-major; a weight [out, in] read transposed in place):
//   forward  y [rows, out] = x [rows, in] · Wᵀ          (NoTrans, Trans)
//   backward dx [rows, in] = g [rows, out] · W           (NoTrans, NoTrans)
//            dW [out, in]  = gᵀ [out, rows] · x          (Trans, NoTrans)
// with rows = batch × time (annotated: 80 × 10 source, 80 × 9 target; medium 32 × 64 and 32 × 63).
// Reported per library and shape: the best and median GFLOP/s over the rounds, and what the
// library detected on this CPU (OpenBLAS's core, BLIS's sub-configuration, MKL's version).
//
//   ./build/bench/bench_blas --lib openblas=/lib/x86_64-linux-gnu/libopenblas.so.0
//       --lib blis=/usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4 [--threads 2] [--json F]
// bench/run_blas_bench.sh finds the libraries (Debian's, and the PyPI wheels it downloads).
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

// The CBLAS enums' values, which every CBLAS shares.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);

struct Library {
  std::string name, path, prefix;
  void* handle = nullptr;
  SgemmFn sgemm = nullptr;
  std::string detected;  // what it chose for this CPU
};

template <typename Fn>
Fn symbol(const Library& lib, const std::string& name) {
  return reinterpret_cast<Fn>(dlsym(lib.handle, (lib.prefix + name).c_str()));
}

// Opens the library, sets its threads and asks what it detected. Exits with a message on failure.
void open_library(Library& lib, int threads) {
  lib.handle = dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib.handle == nullptr) {
    fmt::print(stderr, "bench_blas: cannot load {} from {}: {}\n", lib.name, lib.path, dlerror());
    std::exit(1);
  }
  lib.sgemm = symbol<SgemmFn>(lib, "cblas_sgemm");
  if (lib.sgemm == nullptr) {
    fmt::print(stderr, "bench_blas: {} has no {}cblas_sgemm\n", lib.path, lib.prefix);
    std::exit(1);
  }
  if (auto set = symbol<void (*)(int)>(lib, "openblas_set_num_threads")) set(threads);
  if (auto core = symbol<char* (*)()>(lib, "openblas_get_corename")) {
    lib.detected = fmt::format("OpenBLAS core {}", core());
  }
  if (auto set = symbol<void (*)(int64_t)>(lib, "bli_thread_set_num_threads")) set(threads);
  auto arch_id = symbol<int (*)()>(lib, "bli_arch_query_id");
  auto arch_name = symbol<const char* (*)(int)>(lib, "bli_arch_string");
  if (arch_id && arch_name)
    lib.detected = fmt::format("BLIS sub-configuration {}", arch_name(arch_id()));
  if (auto set = symbol<void (*)(int)>(lib, "MKL_Set_Num_Threads")) set(threads);
  if (auto version = symbol<void (*)(char*, int)>(lib, "MKL_Get_Version_String")) {
    char buffer[256] = {};
    version(buffer, sizeof buffer);
    lib.detected = buffer;
  }
}

struct Shape {
  std::string name;
  int m, n, k;
  bool trans_a, trans_b;
  double flops() const { return 2.0 * m * n * k; }
};

// A linear layer in[in] -> out over `rows` rows: its forward and its two backward products.
void add_linear(std::vector<Shape>& shapes, const std::string& what, int rows, int in, int out) {
  shapes.push_back({what + " fwd", rows, out, in, false, true});
  shapes.push_back({what + " dx", rows, in, out, false, false});
  shapes.push_back({what + " dW", out, in, rows, true, false});
}

std::vector<Shape> model_shapes() {
  std::vector<Shape> s;
  // annotated: d_model 512, d_ff 2048, batch 80, source 10 and target 9 positions.
  add_linear(s, "annotated q/k/v/o enc", 800, 512, 512);
  add_linear(s, "annotated ffn1 enc", 800, 512, 2048);
  add_linear(s, "annotated ffn2 enc", 800, 2048, 512);
  add_linear(s, "annotated q/k/v/o dec", 720, 512, 512);
  // medium: d_model 256, d_ff 1024, batch 32, source 64 and target 63 positions.
  add_linear(s, "medium q/k/v/o enc", 2048, 256, 256);
  add_linear(s, "medium ffn1 enc", 2048, 256, 1024);
  add_linear(s, "medium ffn2 enc", 2048, 1024, 256);
  add_linear(s, "medium q/k/v/o dec", 2016, 256, 256);
  return s;
}

double seconds_of(const Library& lib, const Shape& s, const std::vector<float>& a,
                  const std::vector<float>& b, std::vector<float>& c) {
  const int lda = s.trans_a ? s.m : s.k, ldb = s.trans_b ? s.k : s.n;
  const auto t0 = std::chrono::steady_clock::now();
  lib.sgemm(kRowMajor, s.trans_a ? kTrans : kNoTrans, s.trans_b ? kTrans : kNoTrans, s.m, s.n, s.k,
            1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), s.n);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Library> libs;
  int threads = 2, rounds = 15;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--lib" && has_value) {
      const std::string spec = argv[++i];
      const size_t eq = spec.find('=');
      if (eq == std::string::npos) {
        fmt::print(stderr, "bench_blas: --lib wants name=path[:prefix], not '{}'\n", spec);
        return 2;
      }
      Library lib{spec.substr(0, eq), spec.substr(eq + 1), ""};
      if (const size_t colon = lib.path.rfind(':'); colon != std::string::npos) {
        lib.prefix = lib.path.substr(colon + 1);
        lib.path.resize(colon);
      }
      libs.push_back(lib);
    } else if (arg == "--threads" && has_value) {
      threads = std::atoi(argv[++i]);
    } else if (arg == "--rounds" && has_value) {
      rounds = std::atoi(argv[++i]);
    } else if (arg == "--json" && has_value) {
      json_path = argv[++i];
    } else {
      fmt::print(stderr,
                 "usage: bench_blas --lib name=path[:prefix]... [--threads N] [--rounds N] "
                 "[--json FILE]\n");
      return 2;
    }
  }
  if (libs.empty() || threads < 1 || rounds < 1) {
    fmt::print(stderr, "bench_blas: give at least one --lib, and threads and rounds >= 1\n");
    return 2;
  }
  for (Library& lib : libs) {
    open_library(lib, threads);
    fmt::print("{}: {} ({})\n", lib.name, lib.path, lib.detected.empty() ? "?" : lib.detected);
  }

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::string> rows_json;
  std::vector<double> total_seconds(libs.size(), 0.0);
  fmt::print("\n{:<26} {:>16}", "product", "m x n x k");
  for (const Library& lib : libs) fmt::print(" {:>16}", lib.name + " GFLOP/s");
  fmt::print("   (median of {} rounds; best in brackets)\n", rounds);
  for (const Shape& s : model_shapes()) {
    std::vector<float> a(static_cast<size_t>(s.m) * s.k), b(static_cast<size_t>(s.k) * s.n),
        c(static_cast<size_t>(s.m) * s.n);
    for (float& x : a) x = dist(rng);
    for (float& x : b) x = dist(rng);
    std::vector<std::vector<double>> times(libs.size());
    for (size_t l = 0; l < libs.size(); ++l) seconds_of(libs[l], s, a, b, c);  // warm up
    for (int r = 0; r < rounds; ++r) {
      for (size_t l = 0; l < libs.size(); ++l) times[l].push_back(seconds_of(libs[l], s, a, b, c));
    }
    fmt::print("{:<26} {:>16}", s.name, fmt::format("{}x{}x{}", s.m, s.n, s.k));
    std::vector<std::string> cells;
    for (size_t l = 0; l < libs.size(); ++l) {
      std::sort(times[l].begin(), times[l].end());
      const double median = times[l][times[l].size() / 2], best = times[l].front();
      total_seconds[l] += median;
      fmt::print(" {:>8.1f} [{:>5.1f}]", s.flops() / median * 1e-9, s.flops() / best * 1e-9);
      cells.push_back(fmt::format(R"("{}":{{"median_gflops":{:.2f},"best_gflops":{:.2f}}})",
                                  libs[l].name, s.flops() / median * 1e-9,
                                  s.flops() / best * 1e-9));
    }
    fmt::print("\n");
    rows_json.push_back(fmt::format(R"({{"product":"{}","m":{},"n":{},"k":{},{}}})", s.name, s.m,
                                    s.n, s.k, fmt::join(cells, ",")));
  }
  double flops = 0;
  for (const Shape& s : model_shapes()) flops += s.flops();
  fmt::print("{:<43}", "all of them (one each, summed medians)");
  for (size_t l = 0; l < libs.size(); ++l)
    fmt::print(" {:>16.1f}", flops / total_seconds[l] * 1e-9);
  fmt::print("\n");
  if (!json_path.empty()) {
    std::vector<std::string> lib_json;
    for (size_t l = 0; l < libs.size(); ++l) {
      lib_json.push_back(fmt::format(
          R"({{"name":"{}","path":"{}","detected":"{}","gflops":{:.2f}}})", libs[l].name,
          libs[l].path, libs[l].detected, flops / total_seconds[l] * 1e-9));
    }
    std::ofstream(json_path) << fmt::format(
        R"({{"threads":{},"rounds":{},"libraries":[{}],"products":[{}]}})"
        "\n",
        threads, rounds, fmt::join(lib_json, ","), fmt::join(rows_json, ","));
  }
  return 0;
}
