#include "onednn_matmul.h"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>

#ifdef SG_BENCH_HAS_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace sg::bench {

#ifdef SG_BENCH_HAS_ONEDNN

bool has_onednn() { return true; }

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
}

struct OneDnnBf16Matmul::State {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::memory a32, b32, a16, b16, c;
  dnnl::reorder convert_a, convert_b;
  dnnl::matmul product;
};

OneDnnBf16Matmul::OneDnnBf16Matmul(int64_t M, int64_t N, int64_t K, bool b_transposed, int threads)
    : state_(nullptr) {
  // oneDNN's CPU engine runs on OpenMP threads: as many as the other side of the comparison.
  setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), /*overwrite=*/1);
  state_ = std::make_unique<State>();
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  const dnnl::memory::desc a32{{M, K}, dt::f32, tag::ab}, a16{{M, K}, dt::bf16, tag::ab};
  const tag b_tag = b_transposed ? tag::ba : tag::ab;
  const dnnl::memory::desc b32{{K, N}, dt::f32, b_tag}, b16{{K, N}, dt::bf16, b_tag};
  const dnnl::memory::desc c{{M, N}, dt::f32, tag::ab};
  State& s = *state_;
  s.a32 = dnnl::memory(a32, s.engine);
  s.b32 = dnnl::memory(b32, s.engine);
  s.a16 = dnnl::memory(a16, s.engine);
  s.b16 = dnnl::memory(b16, s.engine);
  s.c = dnnl::memory(c, s.engine);
  s.convert_a = dnnl::reorder(s.a32, s.a16);
  s.convert_b = dnnl::reorder(s.b32, s.b16);
  s.product = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a16, b16, c), s.engine));
}

OneDnnBf16Matmul::~OneDnnBf16Matmul() = default;

void OneDnnBf16Matmul::convert_inputs(const float* a, const float* b) {
  State& s = *state_;
  s.a32.set_data_handle(const_cast<float*>(a));
  s.b32.set_data_handle(const_cast<float*>(b));
  s.convert_a.execute(s.stream, s.a32, s.a16);
  s.convert_b.execute(s.stream, s.b32, s.b16);
  s.stream.wait();
}

void OneDnnBf16Matmul::multiply() {
  State& s = *state_;
  s.product.execute(s.stream,
                    {{DNNL_ARG_SRC, s.a16}, {DNNL_ARG_WEIGHTS, s.b16}, {DNNL_ARG_DST, s.c}});
  s.stream.wait();
}

const float* OneDnnBf16Matmul::result() const {
  return static_cast<const float*>(state_->c.get_data_handle());
}

#else  // built without oneDNN

bool has_onednn() { return false; }
std::string onednn_version() { return ""; }

struct OneDnnBf16Matmul::State {};

OneDnnBf16Matmul::OneDnnBf16Matmul(int64_t, int64_t, int64_t, bool, int) {
  throw std::runtime_error("bench_matmul was built without oneDNN (install libdnnl-dev)");
}
OneDnnBf16Matmul::~OneDnnBf16Matmul() = default;
void OneDnnBf16Matmul::convert_inputs(const float*, const float*) {}
void OneDnnBf16Matmul::multiply() {}
const float* OneDnnBf16Matmul::result() const { return nullptr; }

#endif

}  // namespace sg::bench
