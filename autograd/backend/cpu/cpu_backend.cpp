#include "autograd/backend/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace sg {

namespace {

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }

  void* allocate(size_t nbytes) override {
    // 64-byte alignment: one cache line, and what AVX-512 loads like. aligned_alloc needs a
    // multiple of the alignment, and a non-null pointer even for 0 bytes.
    size_t rounded = (nbytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    SG_CHECK(p != nullptr, "cpu: out of memory allocating {} bytes", nbytes);
    return p;
  }
  void deallocate(void* ptr, size_t /*nbytes*/) override { std::free(ptr); }
  void copy_from_host(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copy_to_host(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }

  void fill(const Tensor& out, double value) override { cpu::fill(out, value); }
  void copy(const Tensor& src, const Tensor& dst) override { cpu::copy(src, dst); }
  void unary(UnaryOp op, const Tensor& x, const Tensor& out, double alpha, double beta) override {
    cpu::unary(op, x, out, alpha, beta);
  }
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override {
    cpu::binary(op, a, b, out);
  }
  void where(const Tensor& c, const Tensor& a, const Tensor& b, const Tensor& out) override {
    cpu::where(c, a, b, out);
  }
  void reduce(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
              const Tensor& indices) override {
    cpu::reduce(op, x, reduced_dims, out, indices);
  }
  void gemm(const Tensor& a, const Tensor& b, const Tensor& out) override { cpu::gemm(a, b, out); }
  void softmax(const Tensor& x, int64_t dim, bool log, const Tensor& out) override {
    cpu::softmax(x, dim, log, out);
  }
  void softmax_backward(const Tensor& grad, const Tensor& y, int64_t dim, bool log,
                        const Tensor& out) override {
    cpu::softmax_backward(grad, y, dim, log, out);
  }
  void index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) override {
    cpu::index_select(x, dim, index, out);
  }
  void index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) override {
    cpu::index_add(out, dim, index, src);
  }
  void gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out) override {
    cpu::gather(x, dim, index, out);
  }
  void scatter_add(const Tensor& out, int64_t dim, const Tensor& index,
                   const Tensor& src) override {
    cpu::scatter_add(out, dim, index, src);
  }
};

}  // namespace

Backend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace sg
