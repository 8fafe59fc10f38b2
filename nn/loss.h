// Losses, with PyTorch's names, defaults and reductions ("mean", "sum", "none").
//   auto logits = model(src, tgt_in);                                    // [B, T, V]
//   auto loss = sg::nn::cross_entropy(logits, tgt_out, /*ignore_index=*/pad,
//                                     /*label_smoothing=*/0.1);          // [] mean over non-pad
//   loss.backward();
// The class dim is the LAST dim ([..., C] logits, [...] targets), the layout a Transformer
// produces; for [N, C] this is exactly torch.nn.functional.cross_entropy. (PyTorch puts classes
// in dim 1 for more dims: there [B, T, V] logits must be transposed to [B, V, T]; here not.)
#pragma once

#include <string>
#include <string_view>

#include "nn/module.h"

namespace sg::nn {

// Cross-entropy from raw logits: the op sg::cross_entropy of autograd/ops.h (gradient softmax -
// target distribution), under its torch.nn.functional name. It runs the composition below, or one
// node with a hand-written backward where the backend has a kernel for it (the fast CPU backend,
// float32). Signature:
//   cross_entropy(logits [..., C], target int64 [...], ignore_index = -100,
//                 label_smoothing = 0.0, reduction = "mean")
// Rows whose target equals ignore_index add nothing, and "mean" divides by the rows that remain
// (NaN if none remain). A using-declaration, not a wrapper: one function, so an unqualified call
// is never ambiguous between sg:: and sg::nn:: (both are found through the Tensor arguments).
using sg::cross_entropy;

// The same loss composed from ops (log_softmax, gather, a smoothing term, where, the reduction):
// the readable definition, what cross_entropy runs where no kernel takes it, and what it is tested
// against (autograd/ops/cross_entropy.cpp).
using sg::cross_entropy_composed;

// Negative log-likelihood of log-probabilities log_probs [..., C] at target [...]:
// -log_probs[target] per row (0 for ignored rows), reduced. The op sg::nll_loss, the same
// composition cross_entropy applies after log_softmax.
using sg::nll_loss;

// Mean squared error (a - b)², reduced. Unlike PyTorch, which broadcasts with a warning, shapes
// must be equal: a [N, 1] prediction against a [N] target would silently compare all N² pairs.
Tensor mse_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean");

// The module form of cross_entropy, holding its options (torch.nn.CrossEntropyLoss).
//   sg::nn::CrossEntropyLoss criterion(/*ignore_index=*/0, /*label_smoothing=*/0.1);
//   auto loss = criterion(logits, target);
class CrossEntropyLoss : public Module {
 public:
  explicit CrossEntropyLoss(int64_t ignore_index = -100, double label_smoothing = 0.0,
                            std::string reduction = "mean");
  Tensor forward(const Tensor& logits, const Tensor& target) const;
  Tensor operator()(const Tensor& logits, const Tensor& target) const {
    return forward(logits, target);
  }

  int64_t ignore_index;
  double label_smoothing;
  std::string reduction;

 protected:
  std::string extra_repr() const override;
};

}  // namespace sg::nn
