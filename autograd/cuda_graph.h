// CUDA graphs: a training step recorded once and replayed, so that the GPU runs its hundreds of
// kernels without the host launching each one.
//
// On small models a step's kernels each run for a few microseconds, and launching one costs the
// host about as long: the GPU waits for the host, and the step takes the time of its launches,
// not of its arithmetic. A graph is launched once per step.
//
//   sg::cuda::Graph graph;                    // on cuda:0
//   train_step(inputs);                       // once eagerly first (see the rules)
//   graph.capture([&] { train_step(inputs); });   // records the kernels; runs none
//   for (...) {
//     inputs.copy_(next_batch);               // new data into the same tensors
//     graph.replay();                         // the whole step
//     ... read loss (a tensor the step wrote) when needed ...
//   }
//
// The rules of capture (a broken rule is an error naming it, never a wrong result):
// - Shapes are fixed: the graph holds the kernels of this step, for these sizes and these
//   addresses. Inputs that change between steps live in tensors made before capture; copy into
//   them before each replay. Tensors the step creates (the loss, the gradients) are made once, in
//   the graph's own memory pool, and rewritten in place by every replay.
// - Nothing in the step waits for the GPU: no item(), to(kCPU), to_vector(), no value-dependent
//   check on the host, no synchronize() (an error says which). Data uploaded from the host inside
//   the step (a causal mask, positions) are constants of the graph: every replay uses the same
//   bytes.
// - Run the step once eagerly before capture: optimizer state (Adam's moments) and cuBLAS's
//   setup are made on first use, and a graph must not remake them on every replay (an optimizer
//   whose state would be made inside the capture refuses).
// - What the host would do each step is done before each replay instead: an optimizer counts its
//   step and puts the current lr (a schedule may have changed it) and bias corrections on the
//   device; dropout draws its seed from the generator, as an eager step would. So N replays
//   compute what N eager steps compute: the same masks, lrs and losses, bit for bit
//   (tests/nn/test_cuda_graph.cpp; the weights agree to the last bits that the GPU's atomic adds,
//   in the embedding's backward, leave to chance in any run, eager or graphed). Optimizers whose
//   update cannot read these from the device (SGD; Adam with amsgrad) refuse to be captured.
// - A graph uses the objects its step used (model, optimizer, inputs): they must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "autograd/device.h"

namespace sg::cuda {

// Whether a graph is being captured on `device` (always false on the CPU and without CUDA).
bool is_capturing(Device device);
// Inside a capture on `device`: host work to do before each replay of the graph (the host side of
// an op whose kernels read values that change between steps). An error outside a capture.
void before_each_replay(Device device, std::function<void()> hook);

// Tensors made in this scope during a capture hold what a before_each_replay hook writes before
// each replay (a seed, Adam's step sizes): they get memory that no other tensor of the graph uses,
// so that no kernel of the replay writes over them before they are read. (Everything else made
// in a capture shares the graph's pool, a block freed early in the step serving a later tensor.)
class ReplayInputScope {
 public:
  ReplayInputScope();
  ~ReplayInputScope();
  ReplayInputScope(const ReplayInputScope&) = delete;
  ReplayInputScope& operator=(const ReplayInputScope&) = delete;
  static bool active();  // on this thread
};

// TF32 for float32 matrix products on CUDA (PyTorch's torch.backends.cuda.matmul.allow_tf32):
// tensor cores round the operands to 10 bits of mantissa, products are several times faster and
// about 1e-3 less exact. Off by default (exact float32, as on the CPU).
void set_allow_tf32(bool allow);
bool allow_tf32();

class Graph {
 public:
  explicit Graph(Device device = Device::cuda(0));
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Records what `step` queues on the device. Nothing runs; an exception inside `step` ends the
  // capture and propagates, leaving the Graph uncaptured.
  void capture(const std::function<void()>& step);
  // Runs the before_each_replay work, then the recorded kernels, in order with everything queued
  // on the device; returns without waiting for them.
  void replay();

  bool captured() const;
  int64_t replays() const;
  int64_t nodes() const;  // kernels and copies in the graph
  Device device() const { return device_; }

 private:
  struct State;
  Device device_;
  std::unique_ptr<State> state_;
  int64_t replays_ = 0;
};

}  // namespace sg::cuda
