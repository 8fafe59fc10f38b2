// What autograd/cuda_graph.h offers in every build: the TF32 switch, ReplayInputScope, and
// without CUDA a Graph
// that says why it cannot run (backend/cuda/graph.cu is the real one).
#include "autograd/cuda_graph.h"

#include <atomic>

#include "autograd/error.h"

namespace sg::cuda {

namespace {
std::atomic<bool> tf32_allowed{false};
thread_local int replay_input_scopes = 0;
}  // namespace

ReplayInputScope::ReplayInputScope() { ++replay_input_scopes; }
ReplayInputScope::~ReplayInputScope() { --replay_input_scopes; }
bool ReplayInputScope::active() { return replay_input_scopes > 0; }

void set_allow_tf32(bool allow) { tf32_allowed = allow; }
bool allow_tf32() { return tf32_allowed; }

#if !SCRATCHGRAD_HAS_CUDA

bool is_capturing(Device /*device*/) { return false; }

void before_each_replay(Device device, std::function<void()> /*hook*/) {
  SG_FAIL(
      "before_each_replay: no CUDA graph is being captured on {} (scratchgrad was built "
      "without CUDA)",
      device);
}

struct Graph::State {};

Graph::Graph(Device device) : device_(device) {
  SG_FAIL(
      "cuda::Graph: scratchgrad was built without CUDA (configure with -DSCRATCHGRAD_CUDA=ON "
      "on a machine with nvcc)");
}
Graph::~Graph() = default;
void Graph::capture(const std::function<void()>& /*step*/) {}
void Graph::replay() {}
bool Graph::captured() const { return false; }
int64_t Graph::replays() const { return replays_; }
int64_t Graph::nodes() const { return 0; }

#endif

}  // namespace sg::cuda
