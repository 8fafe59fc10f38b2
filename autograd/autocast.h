// Autocast: mixed precision for a scope, PyTorch's torch.autocast(dtype=torch.bfloat16).
//
//   {
//     sg::AutocastGuard autocast(sg::kBFloat16);         // around the forward and the loss
//     loss = sg::cross_entropy(model(src, tgt), target);
//   }
//   loss.backward();                                     // outside: as recorded inside
//   optimizer.step();                                    // float32, as always
//
// Inside it, the matrix products -- matmul, fused_linear and linear_composed (nn::Linear), and the
// two products of attention (fused_attention, attention_composed) -- read their float32 operands
// rounded to bfloat16 and sum the exact products in float32; their results are float32. Nothing
// else changes: softmax, log-softmax, layer norm, cross-entropy, reductions and the optimizer stay
// float32, the parameters and Adam's moments stay float32 (the master weights), and gradients come
// back float32. float64 tensors are never rounded (gradcheck stays exact), and bfloat16 tensors
// are still refused by the products (autograd/dtype.h).
//
// An op recorded under autocast remembers it: its backward products read bfloat16-rounded operands
// too, whether or not backward runs inside the guard (it usually runs outside). The state is per
// thread, as grad mode is. docs/13b-mixed-precision.md is the chapter.
#pragma once

#include "autograd/dtype.h"

namespace sg {

// Whether this thread's products run in bfloat16 (torch.is_autocast_enabled).
bool is_autocast_enabled();
// The dtype of autocast's products: bfloat16, the only one scratchgrad has (torch's CPU default).
DType autocast_dtype();

// Autocast for a scope, then the previous state. `enabled` false turns it off inside an enabled
// scope (a region that must stay float32), as torch.autocast(enabled=False). Throws for a dtype
// other than bfloat16.
class AutocastGuard {
 public:
  explicit AutocastGuard(DType dtype, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool saved_;
};

// Whether a product of `dtype` operands runs in bfloat16 now: autocast is on and the operands are
// float32 (float64 is never rounded). The ops record the answer with the product, for backward.
bool autocast_applies(DType dtype);

}  // namespace sg
