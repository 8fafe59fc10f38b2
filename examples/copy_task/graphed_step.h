// One training step of the copy task, run eagerly or, with --cuda-graph, as a CUDA graph
// (autograd/cuda_graph.h): the first step runs eagerly (Adam's state and cuBLAS's setup are made
// on first use), the second is captured with the graph's own input tensors, and that and every
// later step is a replay after its batch is copied into them.
#pragma once

#include <functional>
#include <memory>

#include "autograd/cuda_graph.h"
#include "tasks.h"

namespace copy_task {

class GraphedStep {
 public:
  // step: forward, loss, backward and the optimizer's update on a batch already on the device;
  // returns the step's statistics as a tensor on the device.
  using StepFn = std::function<sg::Tensor(const Batch&)>;
  GraphedStep(StepFn step, bool use_graph, sg::Device device);

  // Runs one step on `batch`; the statistics are the caller's to keep (a replay's own output is
  // rewritten by the next replay, so it is cloned).
  sg::Tensor operator()(const Batch& batch);

 private:
  StepFn step_;
  bool use_graph_;
  sg::Device device_;
  bool warmed_up_ = false;
  std::unique_ptr<sg::cuda::Graph> graph_;
  Batch input_;       // the graph's input tensors, refilled before each replay
  sg::Tensor stats_;  // what the graph writes at each replay
};

}  // namespace copy_task
