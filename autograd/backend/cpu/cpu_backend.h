// The reference CPU backend: every required kernel of backend.h as plain loops, and one
// cblas_?gemm call per matrix product. It implements none of the optional fused kernels, so the
// ops run their composed versions (the contract the CUDA backend has too). One kernel family per
// file, each defining the member functions below: elementwise.cpp (fill, copy, where), unary.cpp,
// binary.cpp, uniform.cpp, reduce.cpp, gemm.cpp, softmax.cpp, indexing.cpp, and cpu_backend.cpp
// (memory). The fast backend (backend/cpu_fast/) derives from this class and overrides what it
// speeds up; SCRATCHGRAD_KERNELS=reference|fast picks one (autograd/cpu_kernels.h).
#pragma once

#include "autograd/backend/backend.h"

namespace sg::cpu {

class CpuBackend : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }

  void* allocate(size_t nbytes) override;
  void deallocate(void* ptr, size_t nbytes) override;
  void copy_from_host(void* dst, const void* host_src, size_t nbytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t nbytes) override;

  void fill(const Tensor& out, double value) override;
  void copy(const Tensor& src, const Tensor& dst) override;
  void unary(UnaryOp op, const Tensor& x, const Tensor& out, double alpha, double beta) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void where(const Tensor& condition, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void uniform(const Tensor& out, uint64_t state) override;
  void reduce(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
              const Tensor& indices) override;
  void gemm(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) override;
  void gemm_bfloat16(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) override;
  void round_to_bfloat16(const Tensor& x, const Tensor& out) override;
  void softmax(const Tensor& x, int64_t dim, bool log, const Tensor& out) override;
  void softmax_backward(const Tensor& grad, const Tensor& y, int64_t dim, bool log,
                        const Tensor& out) override;
  void index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out,
                    std::string_view op) override;
  void index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) override;
  void gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out,
              std::string_view op) override;
  void scatter_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) override;
};

}  // namespace sg::cpu
