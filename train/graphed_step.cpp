#include "train/graphed_step.h"

#include <utility>

namespace sg::train {

GraphedStep::GraphedStep(StepFn step, bool use_graph, Device device)
    : step_(std::move(step)), use_graph_(use_graph), device_(device) {
  SG_CHECK(!use_graph_ || device_.is_cuda(),
           "GraphedStep: a CUDA graph needs the model on a CUDA device, not {}", device_);
}

Tensor GraphedStep::operator()(const Batch& batch) {
  if (!use_graph_ || !warmed_up_) {
    warmed_up_ = true;
    return step_(batch);
  }
  if (!graph_) {
    for (const auto& [name, t] : batch) input_[name] = t.clone();
    graph_ = std::make_unique<cuda::Graph>(device_);
    graph_->capture([this] { stats_ = step_(input_); });  // records; this step runs at replay
  } else {
    SG_CHECK(batch.size() == input_.size(),
             "GraphedStep: the batch has {} tensors, the captured step {}", batch.size(),
             input_.size());
    for (auto& [name, t] : input_) {
      const auto given = batch.find(name);
      SG_CHECK(given != batch.end() && given->second.shape() == t.shape() &&
                   given->second.dtype() == t.dtype(),
               "GraphedStep: the batch's '{}' must be {} {} as in the captured step (a graph's "
               "inputs are fixed)",
               name, t.dtype(), t.shape());
      t.copy_(given->second);
    }
  }
  graph_->replay();
  return stats_.clone();
}

}  // namespace sg::train
