// The CUDA backend object: finds the GPUs, owns each device's allocator, upload staging pool,
// cuBLAS handle and bad-index record. Its kernels are member functions defined in
// backend/cuda/<family>.cu, each making the device current first (CudaBackend::Scope).
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "autograd/backend/cuda/allocator.h"
#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/cuda_check.h"
#include "autograd/backend/cuda/launch.cuh"
#include "autograd/backend/cuda/staging.h"
#include "autograd/cuda_graph.h"

namespace sg {

using cuda::CudaBackend;

namespace {

constexpr int kMaxDevices = 64;

__global__ void probe_kernel(int* out) { *out = 1; }

struct Probe {
  int device_count = 0;
  std::string reason;  // empty: usable
};

// The first device query decides: any error (no driver, no device, driver too old) means no GPU.
// A GPU that answers must also run our kernels (they are built for compute capability 8.0 and
// 9.0), so one tiny kernel is launched on device 0 and its result read back.
Probe probe_cuda() {
  Probe p;
  cudaError_t status = cudaGetDeviceCount(&p.device_count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls are not confused by it
    p.reason = fmt::format("no usable CUDA device: {}", cudaGetErrorString(status));
    return p;
  }
  if (p.device_count == 0) {
    p.reason = "no CUDA device found";
    return p;
  }
  int* flag = nullptr;
  int result = 0;
  status = cudaMalloc(&flag, sizeof(int));
  if (status == cudaSuccess) {
    probe_kernel<<<1, 1>>>(flag);
    status = cudaGetLastError();
    if (status == cudaSuccess) status = cudaMemcpy(&result, flag, sizeof(int), cudaMemcpyDefault);
    cudaFree(flag);
  }
  if (status != cudaSuccess || result != 1) {
    cudaGetLastError();
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    p.reason = fmt::format(
        "CUDA device 0 ({}, compute capability {}.{}) cannot run scratchgrad's kernels (built "
        "for 8.0 and 9.0): {}",
        prop.name, prop.major, prop.minor, cudaGetErrorString(status));
  }
  return p;
}

const Probe& cuda_probe() {
  static const Probe probe = probe_cuda();
  return probe;
}

std::atomic<int64_t> device_to_host_copies{0};

// The stream of the backend whose Scope is open on this thread (launch_stream()).
thread_local cudaStream_t scope_stream = nullptr;

// cuBLAS's workspace, set explicitly so that eager calls and captured ones (which cannot allocate
// one) choose the same algorithms: 32 MiB, what NVIDIA advises for Hopper.
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

// The names of the ops whose kernels check indices, numbered in order of first use: a kernel
// records the number (index_op_id), the host message the name. Grows by a handful of entries.
std::mutex index_op_names_mutex;
std::vector<std::string> index_op_names;

std::string index_op_name(int id) {
  std::lock_guard<std::mutex> lock(index_op_names_mutex);
  return id >= 0 && id < static_cast<int>(index_op_names.size())
             ? index_op_names[static_cast<size_t>(id)]
             : std::string("index");
}

// The message for a bad index that a kernel of `op` found. The ops that look up user data say it
// in their words, as their CPU checks do; the others name the dim and its size.
std::string bad_index_message(const std::string& op, int64_t index, int64_t size, int64_t dim) {
  if (op == "embedding") {
    return fmt::format("embedding: token id {} is out of range for {} embeddings", index, size);
  }
  if (op == "cross_entropy" || op == "nll_loss" || op == "cross_entropy_composed") {
    return fmt::format(
        "{}: target {} is out of range for {} classes; targets must be in [0, {}) or equal "
        "ignore_index",
        op, index, size, size);
  }
  if (op == "one_hot") {
    return fmt::format("one_hot: class value {} is out of range for {} classes", index, size);
  }
  return fmt::format("{}: index {} is out of range for dim {} of size {}", op, index, dim, size);
}

// One backend per device, made on first use and never destroyed: tensors in static objects may
// be freed after static destructors run, and the CUDA runtime may already be gone by then.
std::array<std::atomic<CudaBackend*>, kMaxDevices> backends{};
std::mutex backends_mutex;

CudaBackend& backend_on(int index) {
  CudaBackend* b = backends[static_cast<size_t>(index)].load(std::memory_order_acquire);
  if (b != nullptr) return *b;
  std::lock_guard<std::mutex> lock(backends_mutex);
  b = backends[static_cast<size_t>(index)].load(std::memory_order_relaxed);
  if (b == nullptr) {
    b = new CudaBackend(index);
    backends[static_cast<size_t>(index)].store(b, std::memory_order_release);
  }
  return *b;
}

CudaBackend& current_backend() {
  int device = 0;
  SG_CUDA_CHECK(cudaGetDevice(&device));
  return backend_on(device);
}

}  // namespace

// ---- CudaBackend's own members (its kernels are defined in the kernel files) ----

namespace cuda {

namespace {
int compute_capability_of(int device) {
  int major = 0, minor = 0;
  SG_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  SG_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return 10 * major + minor;
}
}  // namespace

CudaBackend::CudaBackend(int device)
    : device_(device),
      compute_capability_(compute_capability_of(device)),
      name_(fmt::format("cuda:{}", device)),
      allocator_(device) {
  DeviceGuard guard(device_);
  void* record = nullptr;
  SG_CUDA_CHECK(cudaHostAlloc(&record, sizeof(IndexErrorRecord), cudaHostAllocMapped));
  host_record_ = static_cast<IndexErrorRecord*>(record);
  *host_record_ = IndexErrorRecord{0, 0, 0, 0, 0};
  void* device_record = nullptr;
  SG_CUDA_CHECK(cudaHostGetDevicePointer(&device_record, record, 0));
  SG_CUDA_CHECK(cudaMalloc(&error_slot_.claimed, sizeof(int)));
  SG_CUDA_CHECK(cudaMemset(error_slot_.claimed, 0, sizeof(int)));
  error_slot_.record = static_cast<IndexErrorRecord*>(device_record);
  // A blocking stream (not cudaStreamNonBlocking): it stays ordered with the legacy default stream.
  SG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamDefault));
}

CudaBackend::Scope::Scope(CudaBackend& backend)
    : guard(backend.device_), previous_stream(scope_stream) {
  scope_stream = backend.stream_;
  backend.throw_deferred_errors();
}

CudaBackend::Scope::~Scope() { scope_stream = previous_stream; }

void CudaBackend::refuse_while_capturing(std::string_view what, std::string_view instead) const {
  SG_CHECK(!capturing_,
           "{}: {} inside a CUDA graph capture: a graph runs on the GPU alone and cannot stop for "
           "the host; {}",
           name_, what, instead);
}

void* CudaBackend::allocate(size_t nbytes) {
  Scope scope(*this);
  return allocator_.allocate(nbytes, capturing_ && ReplayInputScope::active());
}

void CudaBackend::deallocate(void* ptr, size_t /*nbytes*/) { allocator_.deallocate(ptr); }

void CudaBackend::copy_from_host(void* dst, const void* host_src, size_t nbytes) {
  if (nbytes == 0) return;
  Scope scope(*this);
  if (capturing_) {
    // A constant of the graph (a causal mask, positions): every replay copies these same bytes,
    // from a pinned copy the graph keeps. Inputs that change go into tensors made before
    // capture, filled before each replay (cuda_graph.h).
    void* pinned = nullptr;
    SG_CUDA_CHECK(cudaHostAlloc(&pinned, nbytes, cudaHostAllocDefault));
    std::memcpy(pinned, host_src, nbytes);
    capture_.constants.push_back(pinned);
    SG_CUDA_CHECK(cudaMemcpyAsync(dst, pinned, nbytes, cudaMemcpyHostToDevice, stream_));
    return;
  }
  // Through a pinned buffer, in stream order, without waiting for the GPU (staging.h); not a
  // device-to-host copy, so device_to_host_copies does not count it.
  staging_.upload(dst, host_src, nbytes, stream_);
}

void CudaBackend::copy_to_host(void* host_dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  Scope scope(*this);
  refuse_while_capturing(
      "a read back to the host (item(), to(kCPU), to_vector(), a check on values)",
      "read the step's outputs after replay() instead");
  ++device_to_host_copies;
  // Waits for every kernel queued before it, which makes this the place where a deferred
  // kernel error surfaces.
  SG_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, nbytes, cudaMemcpyDeviceToHost, stream_));
  SG_CUDA_CHECK(cudaStreamSynchronize(stream_));
  throw_deferred_errors();
}

cublasHandle_t CudaBackend::cublas() {
  std::call_once(cublas_once_, [this] {
    const CublasApi& api = cublas_api();  // loaded here, on first use
    SG_CUBLAS_CHECK(api.create(&cublas_));
    SG_CUBLAS_CHECK(api.set_stream(cublas_, stream_));  // the kernels' stream
    SG_CUDA_CHECK(cudaMalloc(&cublas_workspace_, kCublasWorkspaceBytes));
    SG_CUBLAS_CHECK(api.set_workspace(cublas_, cublas_workspace_, kCublasWorkspaceBytes));
  });
  return cublas_;
}

void CudaBackend::empty_cache() {
  Scope scope(*this);
  refuse_while_capturing("empty_cache", "call it before capture() or after");
  allocator_.empty_cache();
}

void CudaBackend::synchronize() {
  Scope scope(*this);
  refuse_while_capturing("synchronize", "call it after replay()");
  SG_CUDA_CHECK(cudaDeviceSynchronize());
  throw_deferred_errors();
}

void CudaBackend::throw_deferred_errors() {
  volatile IndexErrorRecord* r = host_record_;
  if (r->ready == 0) return;
  const IndexErrorRecord found{r->op, r->index, r->size, r->dim, 1};
  // Re-arm: clear the host record, then (in stream order, after the failed kernel) the claim.
  r->ready = 0;
  SG_CUDA_CHECK(cudaMemsetAsync(error_slot_.claimed, 0, sizeof(int), stream_));
  SG_FAIL(
      "{} (found by a CUDA kernel, which runs asynchronously: the error surfaces at a later "
      "call, here on {})",
      bad_index_message(index_op_name(found.op), found.index, found.size, found.dim), name_);
}

}  // namespace cuda

bool cuda_available() { return cuda_probe().reason.empty(); }

std::string cuda_unavailable_reason() { return cuda_probe().reason; }

Backend& cuda_backend(int index) {
  const Probe& probe = cuda_probe();
  SG_CHECK(probe.reason.empty(), "cuda:{}: {}", index, probe.reason);
  SG_CHECK(index >= 0 && index < probe.device_count && index < kMaxDevices,
           "cuda:{}: no such device (this machine has {} CUDA device{})", index, probe.device_count,
           probe.device_count == 1 ? "" : "s");
  return backend_on(index);
}

CudaMemoryStats cuda_memory_stats(int index) {
  return static_cast<CudaBackend&>(cuda_backend(index)).memory_stats();
}

CudaStagingStats cuda_staging_stats(int index) {
  return static_cast<CudaBackend&>(cuda_backend(index)).staging_stats();
}

void cuda_empty_cache(int index) { static_cast<CudaBackend&>(cuda_backend(index)).empty_cache(); }

void cuda_synchronize(int index) { static_cast<CudaBackend&>(cuda_backend(index)).synchronize(); }

int64_t cuda_device_to_host_copies() { return device_to_host_copies.load(); }

cudaStream_t cuda_stream(int index) {
  return static_cast<CudaBackend&>(cuda_backend(index)).stream();
}

namespace cuda {

IndexErrorSlot index_error_slot() { return current_backend().error_slot(); }

int index_op_id(std::string_view op) {
  std::lock_guard<std::mutex> lock(index_op_names_mutex);
  for (size_t i = 0; i < index_op_names.size(); ++i) {
    if (index_op_names[i] == op) return static_cast<int>(i);
  }
  index_op_names.emplace_back(op);
  return static_cast<int>(index_op_names.size()) - 1;
}

cublasHandle_t cublas_handle() { return current_backend().cublas(); }

cudaStream_t launch_stream() {
  return scope_stream != nullptr ? scope_stream : current_backend().stream();
}

}  // namespace cuda

}  // namespace sg
