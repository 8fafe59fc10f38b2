// One training step run eagerly or, on a GPU, as a CUDA graph (autograd/cuda_graph.h): the first
// step runs eagerly (Adam's state and cuBLAS's setup are made on first use), the second is
// captured with the graph's own input tensors, and that and every later step is a replay after
// the batch is copied into them. The Trainer runs its steps through one (TrainerOptions::
// cuda_graph).
//
//   GraphedStep step([&](const Batch& b) { ...forward, backward, update...; return stats; },
//                    /*use_graph=*/true, model_device);
//   Tensor stats = step(batch);   // batch on model_device, the same shapes at every step
#pragma once

#include <functional>
#include <memory>

#include "autograd/cuda_graph.h"
#include "train/trainer.h"

namespace sg::train {

class GraphedStep {
 public:
  // step: the forward, the loss, backward and the update on a batch already on the device; it
  // returns the step's statistics as a tensor on the device, and reads nothing back.
  using StepFn = std::function<Tensor(const Batch&)>;
  GraphedStep(StepFn step, bool use_graph, Device device);

  // Runs one step on `batch`; the statistics are the caller's to keep (a replay's own output is
  // rewritten by the next replay, so it is cloned). Every batch after the first must have the
  // first one's tensors, shapes and dtypes (the graph's inputs are fixed).
  Tensor operator()(const Batch& batch);

 private:
  StepFn step_;
  bool use_graph_;
  Device device_;
  bool warmed_up_ = false;
  std::unique_ptr<cuda::Graph> graph_;
  Batch input_;   // the graph's input tensors, refilled before each replay
  Tensor stats_;  // what the graph writes at each replay
};

}  // namespace sg::train
