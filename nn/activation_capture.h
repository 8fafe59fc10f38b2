// Named activation and gradient capture: records every submodule's output during a forward pass,
// the gradient of the loss with respect to each of those outputs, every parameter's gradient and
// the loss, under PyTorch's names, and writes them to one safetensors file. Run the same step in
// PyTorch with the same hooks (scripts/capture_torch_step.py) and sg::nn::compare_captures
// (nn/capture_compare.h) names the first module whose output or gradient differs.
//
//   sg::nn::ActivationCapture capture(model);        // a forward hook on every submodule
//   Tensor logits = model(src, tgt_in);
//   Tensor loss = sg::nn::cross_entropy(logits.reshape({-1, V}), labels.reshape({-1}));
//   capture.backward(loss);                           // fills .grad() too, as loss.backward()
//   capture.save("ours.safetensors");
//
// Names, in the file's metadata "order" (the order compare_captures reports in):
//   "encoder.layers.0.self_attn"                 the outputs, in the order the forwards finished
//   "positional#2"                               a module's second call (the Transformer runs its
//                                                positional encoding for source and target)
//   "loss"
//   "grad_output.generator", "grad.generator.weight", ...
//                                                backward, from the last output to the first: the
//                                                gradient of the loss with respect to each output,
//                                                and after a module's first call, the gradients of
//                                                its own parameters (PyTorch's p.grad)
// The model itself (named "" by named_modules) is not recorded: its output is what the caller
// holds. Parameters without a gradient and outputs that do not require grad have no grad entry.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "nn/module.h"
#include "nn/safetensors.h"

namespace sg::nn {

class ActivationCapture {
 public:
  // `model` must outlive the capture. The hooks go when the capture is destroyed or on remove().
  explicit ActivationCapture(Module& model);
  ActivationCapture(const ActivationCapture&) = delete;  // the hooks point at this object
  ActivationCapture& operator=(const ActivationCapture&) = delete;

  struct Record {
    std::string name;       // qualified module name, with "#2" etc. from the second call on
    std::string base_name;  // the qualified name alone
    Module* module;
    Tensor output;
    bool first_call;  // the module's first call since the last clear()
    Tensor grad;      // the gradient of the loss with respect to output, after backward()
  };
  const std::vector<Record>& records() const { return records_; }

  // The gradients of `loss` (a scalar) with respect to every recorded output
  // (sg::autograd::grad, the graph kept), then loss.backward(): the parameters' .grad() are filled
  // as by a plain backward, and the optimizer step may follow.
  void backward(const Tensor& loss);

  // Outputs, loss and gradients (detached) in the order described above.
  NamedTensors entries() const;
  // Writes entries() with the metadata "order" (their names, comma-separated) and `metadata`.
  void save(const std::string& path, Metadata metadata = {}) const;

  void clear();   // forgets what was recorded; the hooks stay
  void remove();  // removes the hooks; what was recorded stays

 private:
  Module* model_;
  std::vector<RemovableHandle> handles_;
  std::vector<Record> records_;
  std::unordered_map<const Module*, int> calls_;  // forwards of each module since clear()
  Tensor loss_;
};

}  // namespace sg::nn
