// CUDA graphs (autograd/cuda_graph.h): capture on the backend's stream, the graph's memory pool,
// the constants it keeps and the host work before each replay.
#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "autograd/backend/backend.h"
#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/cuda_graph.h"

namespace sg {

namespace cuda {

void CudaBackend::begin_capture() {
  Scope scope(*this);
  SG_CHECK(!capturing_, "{}: a CUDA graph is already being captured here", name_);
  cublas();  // made before, never inside: a capture cannot create the handle or its workspace
  capture_ = Capture{};
  capture_.pool = allocator_.begin_graph_pool();
  capturing_ = true;
  // Relaxed: the allocator may still call cudaMalloc for the graph's pool while capturing; the
  // calls that would wait for the GPU are refused by this backend with a clear error instead.
  const cudaError_t status = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed);
  if (status != cudaSuccess) {
    cudaGetLastError();
    capturing_ = false;
    allocator_.end_graph_capture();
    allocator_.release_graph_pool(capture_.pool);
    SG_FAIL("{}: cannot start a CUDA graph capture: {}", name_, cudaGetErrorString(status));
  }
}

CudaBackend::Capture CudaBackend::end_capture() noexcept {
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(device_);
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(stream_, &graph) != cudaSuccess) {
    cudaGetLastError();  // a broken capture: its error is reported by Graph::capture
    if (graph != nullptr) cudaGraphDestroy(graph);
    graph = nullptr;
  }
  capturing_ = false;
  allocator_.end_graph_capture();
  cudaSetDevice(previous);
  Capture done = std::move(capture_);
  capture_ = Capture{};
  done.graph = graph;
  return done;
}

void CudaBackend::add_replay_hook(std::function<void()> hook) {
  SG_CHECK(capturing_, "{}: before_each_replay outside a CUDA graph capture", name_);
  capture_.hooks.push_back(std::move(hook));
}

namespace {

// Gives back what a capture holds: its graph, the pinned constants, its memory pool.
void release(CudaBackend& backend, CudaBackend::Capture& capture) {
  if (capture.graph != nullptr) cudaGraphDestroy(capture.graph);
  for (void* pinned : capture.constants) cudaFreeHost(pinned);
  backend.release_graph_pool(capture.pool);
}

CudaBackend& backend_of(Device device, std::string_view what) {
  SG_CHECK(device.is_cuda(), "{}: CUDA graphs run on a CUDA device, got {}", what, device);
  return static_cast<CudaBackend&>(backend_for(device));
}

}  // namespace

bool is_capturing(Device device) {
  if (!device.is_cuda() || !cuda_available()) return false;
  return static_cast<CudaBackend&>(backend_for(device)).capturing();
}

void before_each_replay(Device device, std::function<void()> hook) {
  backend_of(device, "before_each_replay").add_replay_hook(std::move(hook));
}

struct Graph::State {
  CudaBackend* backend = nullptr;
  CudaBackend::Capture capture;
  cudaGraphExec_t exec = nullptr;
};

Graph::Graph(Device device) : device_(device) {
  SG_CHECK(device.is_cuda(), "cuda::Graph: CUDA graphs run on a CUDA device, got {}", device);
}

Graph::~Graph() {
  if (!state_) return;
  CudaBackend& b = *state_->backend;
  DeviceGuard guard(device_.index);
  cudaStreamSynchronize(b.stream());  // no replay still reads what is freed below
  if (state_->exec != nullptr) cudaGraphExecDestroy(state_->exec);
  release(b, state_->capture);
}

void Graph::capture(const std::function<void()>& step) {
  SG_CHECK(!state_, "cuda::Graph: already captured; make another Graph for another step");
  CudaBackend& b = backend_of(device_, "cuda::Graph::capture");
  b.synchronize();  // an error of earlier work surfaces here, not inside the capture
  auto state = std::make_unique<State>();
  state->backend = &b;
  b.begin_capture();
  try {
    step();
  } catch (...) {
    CudaBackend::Capture broken = b.end_capture();
    release(b, broken);
    throw;
  }
  state->capture = b.end_capture();
  if (state->capture.graph == nullptr) {
    release(b, state->capture);
    SG_FAIL(
        "cuda::Graph::capture: CUDA ended the capture as invalid (something in the step used "
        "the device outside its stream, or waited for it: {})",
        cudaGetErrorString(cudaGetLastError()));
  }
  DeviceGuard guard(device_.index);
  const cudaError_t status = cudaGraphInstantiate(&state->exec, state->capture.graph, 0);
  if (status != cudaSuccess) {
    cudaGetLastError();
    release(b, state->capture);
    SG_FAIL("cuda::Graph::capture: cannot instantiate the graph: {}", cudaGetErrorString(status));
  }
  state_ = std::move(state);
}

void Graph::replay() {
  SG_CHECK(state_, "cuda::Graph::replay: nothing captured yet (call capture() first)");
  for (const std::function<void()>& hook : state_->capture.hooks) hook();
  DeviceGuard guard(device_.index);
  SG_CUDA_CHECK(cudaGraphLaunch(state_->exec, state_->backend->stream()));
  ++replays_;
}

bool Graph::captured() const { return static_cast<bool>(state_); }

int64_t Graph::replays() const { return replays_; }

int64_t Graph::nodes() const {
  if (!state_) return 0;
  size_t n = 0;
  SG_CUDA_CHECK(cudaGraphGetNodes(state_->capture.graph, nullptr, &n));
  return static_cast<int64_t>(n);
}

}  // namespace cuda

}  // namespace sg
