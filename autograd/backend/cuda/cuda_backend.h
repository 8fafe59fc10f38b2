// The CUDA backend: every kernel of backend.h on an NVIDIA GPU. backend_for(Device::cuda(i)) in
// autograd/backend/backend.cpp is its only user in the library; the functions below the entry
// point are tools for tests and benchmarks (this header exists only in CUDA builds: include it
// under #if SCRATCHGRAD_HAS_CUDA).
//
// The kernels live one family per file (elementwise.cu, reduce.cu, gemm.cu (cuBLAS), softmax.cu,
// indexing.cu, and the fused layer_norm.cu and adam.cu), named like their CPU twins in
// backend/cpu/. Everything runs on one stream per device (the backend's own, which CUDA graphs
// can capture; it is a blocking stream, so work on the legacy default stream, NCCL's for one,
// stays ordered with it), in order, so the host queues kernels without waiting for them; it waits
// for the GPU when it reads data back (copy_to_host: Tensor::to(kCPU), item(), to_vector()).
// Uploads (copy_from_host) do not wait: they go through pinned staging buffers (staging.h).
#pragma once

#include <cstdint>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "autograd/backend/backend.h"
#include "autograd/backend/cuda/allocator.h"
#include "autograd/backend/cuda/cuda_check.h"
#include "autograd/backend/cuda/index_error.h"
#include "autograd/backend/cuda/staging.h"

namespace sg {

// The backend for CUDA device `index`; throws when no usable GPU answers.
Backend& cuda_backend(int index);

// The caching allocator's numbers for device `index` (see allocator.h).
CudaMemoryStats cuda_memory_stats(int index = 0);
// What device `index`'s upload staging pool has done (see staging.h).
CudaStagingStats cuda_staging_stats(int index = 0);
// Gives device `index`'s cached free blocks back to the driver.
void cuda_empty_cache(int index = 0);
// Waits until device `index` has run everything queued; throws a kernel's deferred error (a bad
// index in gather, say) here at the latest.
void cuda_synchronize(int index = 0);
// How many device-to-host copies the CUDA backend has made so far, on any device: each one
// makes the host wait for the GPU, so a training step makes none (tests/nn/test_cuda_training.cpp).
int64_t cuda_device_to_host_copies();
// The stream device `index`'s kernels run on (for code that adds its own work in order with
// them: NCCL's collectives, benchmarks).
cudaStream_t cuda_stream(int index = 0);

namespace cuda {

// One GPU's backend. The kernels are defined in the file of their family (elementwise.cu,
// reduce.cu, gemm.cu, softmax.cu, indexing.cu, layer_norm.cu, adam.cu), each opening with a Scope;
// the memory and the tools in cuda_backend.cu.
class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device);
  std::string_view name() const override { return name_; }

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
  // The optional fused kernels it has (softmax.cu, layer_norm.cu, adam.cu).
  bool masked_softmax(const Tensor& x, const Tensor& mask, const Tensor& out) override;
  bool layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                  const Tensor& out, const Tensor& mean, const Tensor& rstd) override;
  bool layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& mean,
                           const Tensor& rstd, const Tensor& weight, const Tensor& dx,
                           const Tensor& dweight, const Tensor& dbias) override;
  bool adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                   const Tensor& exp_avg_sq, double lr, double beta1, double beta2, double eps,
                   double weight_decay, bool decoupled_weight_decay, int64_t step) override;
  bool adam_update_foreach(const std::vector<AdamTensors>& parameters, double beta1, double beta2,
                           double eps, double weight_decay, bool decoupled_weight_decay) override;
  // Their twins for CUDA graphs, reading what a replay changes from the device (cuda_graph.h).
  bool uniform_from_device(const Tensor& out, const Tensor& state) override;
  bool adam_update_from_device(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                               const Tensor& exp_avg_sq, const Tensor& step_scalars, double beta1,
                               double beta2, double eps, double weight_decay,
                               bool decoupled_weight_decay) override;

  // For the kernels and the tools above.
  cublasHandle_t cublas();
  int compute_capability() const { return compute_capability_; }
  IndexErrorSlot error_slot() const { return error_slot_; }
  CudaMemoryStats memory_stats() const { return allocator_.stats(); }
  CudaStagingStats staging_stats() const { return staging_.stats(); }
  void empty_cache();
  void synchronize();
  cudaStream_t stream() const { return stream_; }

  // ---- CUDA graph capture (graph.cu, cuda_graph.h) ----
  struct Capture {
    cudaGraph_t graph = nullptr;
    int pool = 0;                              // the allocator's pool of the graph
    std::vector<void*> constants;              // pinned host copies of uploads made in it
    std::vector<std::function<void()>> hooks;  // host work before each replay
  };
  // Starts capturing this device's stream; allocations go to a new pool until end_capture().
  void begin_capture();
  // Ends it: the graph (nullptr when the capture broke) and what it owns. Never throws.
  Capture end_capture() noexcept;
  bool capturing() const { return capturing_; }
  void add_replay_hook(std::function<void()> hook);
  void release_graph_pool(int pool) { allocator_.release_graph_pool(pool); }

 private:
  // Every call: make the device current, and report a bad index that a kernel of an earlier call
  // found (reading the mapped record costs no copy and no wait).
  // It also makes this backend's stream the one launch_stream() gives.
  struct Scope {
    explicit Scope(CudaBackend& backend);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    DeviceGuard guard;
    cudaStream_t previous_stream;
  };
  // The clear error for what a graph cannot hold (a wait for the GPU): `what` names it.
  void refuse_while_capturing(std::string_view what, std::string_view instead) const;

  void throw_deferred_errors();

  int device_;
  int compute_capability_;  // 10 * major + minor
  std::string name_;
  CachingAllocator allocator_;
  StagingPool staging_;
  cudaStream_t stream_ = nullptr;
  std::once_flag cublas_once_;
  cublasHandle_t cublas_ = nullptr;
  void* cublas_workspace_ = nullptr;
  std::atomic<bool> capturing_{false};
  Capture capture_;
  IndexErrorRecord* host_record_ = nullptr;
  IndexErrorSlot error_slot_{nullptr, nullptr};
};

}  // namespace cuda

}  // namespace sg
