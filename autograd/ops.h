// The op table: every differentiable operation, with its gradient formula in one line.
//
//   auto y = sg::softmax(sg::matmul(q, k.transpose(-2, -1)) / 8.0, -1);   // [B, T, S]
//
// Each op lives in autograd/ops/<family>.cpp with its forward and backward side by side: the
// forward checks shapes, dtypes and devices first (errors name the op and the shapes), computes
// through backend_for(device), then records how to send gradients back (autograd/node.h).
// Notation: g = gradient of the output, y = the output, ⊙ = elementwise product. Gradients of
// broadcast inputs are summed back to the input's shape by the engine (sum_to), not by the ops.
// Tensor methods (x.exp(), x.sum(-1)...) call these functions.
#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "autograd/call_site.h"
#include "autograd/tensor.h"

namespace sg {

// ---- views: ops/views.cpp (no data copied; backward reshapes or scatters g back) ----
Tensor view(const Tensor& x, const Shape& shape,
            CallSite site = CallSite::current());  // dx = g.view(x.shape)
Tensor reshape(const Tensor& x, const Shape& shape,
               CallSite site = CallSite::current());  // a view when strides allow, else a copy
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1,
                 CallSite site = CallSite::current());  // dx = g.transpose(dim0, dim1)
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims,
               CallSite site = CallSite::current());  // dx = g.permute(inverse)
Tensor unsqueeze(const Tensor& x, int64_t dim,
                 CallSite site = CallSite::current());  // dx = g.squeeze(dim)
Tensor squeeze(const Tensor& x, std::optional<int64_t> dim = std::nullopt,
               CallSite site = CallSite::current());  // dx = g.view(x.shape)
Tensor expand(const Tensor& x, const Shape& shape,
              CallSite site = CallSite::current());  // dx = sum_to(g, x.shape); -1 keeps a size
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1,
             CallSite site = CallSite::current());
// dx = zeros, with g copied into the slice
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length,
              CallSite site = CallSite::current());  // slice with step 1
Tensor select(const Tensor& x, int64_t dim, int64_t index,
              CallSite site = CallSite::current());  // dx = zeros, g copied into row
Tensor contiguous(const Tensor& x, CallSite site = CallSite::current());  // dx = g
Tensor to_dtype(const Tensor& x, DType dtype,
                CallSite site = CallSite::current());  // dx = g.to(x.dtype)

// ---- elementwise unary: ops/unary.cpp ----
Tensor neg(const Tensor& x, CallSite site = CallSite::current());    // dx = -g
Tensor exp(const Tensor& x, CallSite site = CallSite::current());    // dx = g ⊙ y
Tensor log(const Tensor& x, CallSite site = CallSite::current());    // dx = g / x
Tensor sqrt(const Tensor& x, CallSite site = CallSite::current());   // dx = g / (2 y)
Tensor rsqrt(const Tensor& x, CallSite site = CallSite::current());  // dx = -g ⊙ y³ / 2
Tensor abs(const Tensor& x, CallSite site = CallSite::current());    // dx = g ⊙ sign(x)
Tensor sign(const Tensor& x,
            CallSite site = CallSite::current());  // not differentiable (zero gradient)
Tensor tanh(const Tensor& x, CallSite site = CallSite::current());     // dx = g ⊙ (1 - y²)
Tensor sigmoid(const Tensor& x, CallSite site = CallSite::current());  // dx = g ⊙ y ⊙ (1 - y)
Tensor relu(const Tensor& x, CallSite site = CallSite::current());     // dx = g ⊙ [x > 0]
// approximate: "none" = x Φ(x) with the exact erf; "tanh" = the tanh approximation.
Tensor gelu(const Tensor& x, std::string_view approximate = "none",
            CallSite site = CallSite::current());  // dx = g ⊙ gelu'(x)
Tensor pow(const Tensor& x, double exponent,
           CallSite site = CallSite::current());                      // dx = g ⊙ p x^(p-1)
Tensor square(const Tensor& x, CallSite site = CallSite::current());  // dx = 2 g ⊙ x
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max,
             CallSite site = CallSite::current());
// dx = g ⊙ [min <= x <= max]
Tensor logical_not(const Tensor& x, CallSite site = CallSite::current());  // bool -> bool

// ---- elementwise binary, broadcasting: ops/binary.cpp ----
// Tensor-tensor operands promote as bool < int64 < float32 < float64.
Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0,
           CallSite site = CallSite::current());  // y = a + alpha b; da = g, db = alpha g
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1.0,
           CallSite site = CallSite::current());  // da = g, db = -alpha g
Tensor mul(const Tensor& a, const Tensor& b,
           CallSite site = CallSite::current());  // da = g ⊙ b, db = g ⊙ a
Tensor div(const Tensor& a, const Tensor& b,
           CallSite site = CallSite::current());  // da = g / b, db = -g ⊙ a / b²
Tensor pow(const Tensor& a, const Tensor& b,
           CallSite site = CallSite::current());  // da = g ⊙ b a^(b-1), db = g ⊙ y ln a
Tensor maximum(const Tensor& a, const Tensor& b,
               CallSite site = CallSite::current());  // g goes to the larger (split evenly on ties)
Tensor minimum(
    const Tensor& a, const Tensor& b,
    CallSite site = CallSite::current());  // g goes to the smaller (split evenly on ties)
// Comparisons and logic return bool tensors and have no gradient (the operators a == b, x < 0...
// of tensor.h call these).
Tensor eq(const Tensor& a, const Tensor& b, CallSite site = CallSite::current());
Tensor ne(const Tensor& a, const Tensor& b, CallSite site = CallSite::current());
Tensor lt(const Tensor& a, const Tensor& b, CallSite site = CallSite::current());
Tensor le(const Tensor& a, const Tensor& b, CallSite site = CallSite::current());
Tensor gt(const Tensor& a, const Tensor& b, CallSite site = CallSite::current());
Tensor ge(const Tensor& a, const Tensor& b, CallSite site = CallSite::current());
Tensor logical_and(const Tensor& a, const Tensor& b, CallSite site = CallSite::current());
Tensor logical_or(const Tensor& a, const Tensor& b, CallSite site = CallSite::current());
// A double operand as a 0-d tensor: x's dtype if x is floating, else int64 or float32.
Tensor scalar_like(const Tensor& x, double value, CallSite site = CallSite::current());

// ---- reductions: ops/reduce.cpp ----
// dims is one dim, sum(x, -1), or a list, sum(x, {0, 2}) (Dims, in tensor.h); an empty list
// means all dims.
Tensor sum(const Tensor& x, const Dims& dims = {}, bool keepdim = false,
           CallSite site = CallSite::current());
// dx = g broadcast back over dims
Tensor mean(const Tensor& x, const Dims& dims = {}, bool keepdim = false,
            CallSite site = CallSite::current());
// dx = g / n broadcast back
// Variance with Bessel's `correction` (1 = unbiased, as torch.var; 0 = population).
Tensor var(const Tensor& x, const Dims& dims = {}, int64_t correction = 1, bool keepdim = false,
           CallSite site = CallSite::current());  // dx = 2 g ⊙ (x - mean) / (n - correction)
Tensor amax(const Tensor& x, const Dims& dims = {}, bool keepdim = false,
            CallSite site = CallSite::current());
// g split evenly among the maxima
Tensor amin(const Tensor& x, const Dims& dims = {}, bool keepdim = false,
            CallSite site = CallSite::current());
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false,
                              CallSite site = CallSite::current());
// values, indices; dx = g scattered to indices
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false,
                              CallSite site = CallSite::current());
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false,
              CallSite site = CallSite::current());  // int64, no gradient
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false,
              CallSite site = CallSite::current());
// Sums a broadcast gradient down to `shape` (the engine's unbroadcast). dx = g.expand(y.shape)
Tensor sum_to(const Tensor& x, const Shape& shape, CallSite site = CallSite::current());

// ---- matmul: ops/matmul.cpp ----
// PyTorch semantics: 1-D·1-D dot, 2-D·2-D, 1-D promoted to a matrix and the added dim removed,
// N-D batched with broadcast batch dims. Through BLAS; transposed views are not copied.
Tensor matmul(const Tensor& a, const Tensor& b,
              CallSite site = CallSite::current());  // da = g·bᵀ, db = aᵀ·g (summed over broadcast)

// ---- softmax family: ops/softmax.cpp ----
// Numerically stable (the max is subtracted first).
Tensor softmax(const Tensor& x, int64_t dim,
               CallSite site = CallSite::current());  // dx = y ⊙ (g - Σ g⊙y)
Tensor log_softmax(const Tensor& x, int64_t dim,
                   CallSite site = CallSite::current());  // dx = g - exp(y) Σ g
// softmax over the entries where mask (bool, broadcast to x) is true, 0 elsewhere; a row with no
// true entry is all zeros. The attention softmax, fused. dx = y ⊙ (g - Σ g⊙y)
Tensor masked_softmax(const Tensor& x, const Tensor& mask, int64_t dim = -1,
                      CallSite site = CallSite::current());

// ---- the linear layer: ops/linear.cpp ----
// y = x·Wᵀ + b with x [..., in], weight [out, in], bias [out] or undefined: nn::linear's math as
// one op, the product accumulated onto the bias. dx = g·W, dW = gᵀ·x, db = Σ_rows g
Tensor fused_linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                    CallSite site = CallSite::current());
// The same math from matmul and add (nn::linear); fused_linear runs it where the backend has no
// Linear kernel.
Tensor linear_composed(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                       CallSite site = CallSite::current());

// ---- attention as one op: ops/attention.cpp ----
// nn::scaled_dot_product_attention's math (no dropout) for q [B, H, T, Dh], k [B, H, S, Dh],
// v [B, H, S, Dv] and a bool mask broadcastable to [B, H, T, S] (or undefined): {output
// [B, H, T, Dv], weights [B, H, T, S]}, both differentiable, in one kernel of the backend's where
// it has one for these shapes (the fast CPU backend's for S, Dh, Dv <= 64), attention_composed's
// where it has none.
std::pair<Tensor, Tensor> fused_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                          const Tensor& mask, double scale,
                                          CallSite site = CallSite::current());
// The same math from matmul, a scale, masked_softmax (softmax without a mask) and dropout of the
// weights: {output, weights}. nn::scaled_dot_product_attention runs it.
std::pair<Tensor, Tensor> attention_composed(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const Tensor& mask, double scale,
                                             double dropout_p = 0.0, bool training = false,
                                             CallSite site = CallSite::current());

// ---- normalisation: ops/normalization.cpp ----
// Layer norm over the last dims (those of normalized_shape) as one op; nn::layer_norm is the same
// math composed from primitives. weight and bias may be undefined.
// y = x̂ ⊙ weight + bias, x̂ = (x - mean) / √(var + eps);
// dx = (ĝ - mean(ĝ) - x̂ mean(ĝ ⊙ x̂)) / √(var + eps) with ĝ = g ⊙ weight; dweight = Σ g ⊙ x̂
Tensor fused_layer_norm(const Tensor& x, const Shape& normalized_shape,
                        const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                        double eps = 1e-5, CallSite site = CallSite::current());
// The same math from mean, sub, mul and rsqrt (nn::layer_norm); fused_layer_norm runs it where
// the backend has no layer-norm kernel.
Tensor layer_norm_composed(const Tensor& x, const Shape& normalized_shape,
                           const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                           double eps = 1e-5, CallSite site = CallSite::current());

// ---- selection and masking: ops/masking.cpp ----
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b,
             CallSite site = CallSite::current());  // da = g⊙c, db = g⊙!c
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value,
                   CallSite site = CallSite::current());  // dx = g ⊙ !mask
Tensor tril(const Tensor& x, int64_t diagonal = 0,
            CallSite site = CallSite::current());  // keeps j <= i + diagonal; dx = tril(g)
Tensor triu(const Tensor& x, int64_t diagonal = 0,
            CallSite site = CallSite::current());  // keeps j >= i + diagonal; dx = triu(g)

// ---- indexing: ops/indexing.cpp ----
// index: int64. index_select picks whole slices along dim (the embedding lookup):
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index,
                    CallSite site = CallSite::current());  // dx = index_add(0, g)
// gather picks one element per position: y[i][j] = x[i][index[i][j]] for dim 1.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index,
              CallSite site = CallSite::current());  // dx = scatter_add(0, g)
// Embedding lookup: weight [V, D], ids of any shape -> [..., D]. Rows equal to padding_idx get
// no gradient. dweight = index_add of g over the ids.
Tensor embedding(const Tensor& weight, const Tensor& ids, std::optional<int64_t> padding_idx = {},
                 CallSite site = CallSite::current());
Tensor one_hot(const Tensor& index, int64_t num_classes,
               CallSite site = CallSite::current());  // int64 [..., C]; no gradient

// ---- joining and splitting: ops/join.cpp ----
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0,
           CallSite site = CallSite::current());  // dx_i = g.narrow(dim, off_i, n_i)
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0,
             CallSite site = CallSite::current());  // cat of unsqueezed inputs
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0,
                          CallSite site = CallSite::current());  // narrow views
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0,
                          CallSite site = CallSite::current());

// ---- random: ops/dropout.cpp ----
// Inverted dropout: zeroes each element with probability p and scales the rest by 1/(1-p), so the
// expected value is unchanged; identity when !training or p == 0. dx = g ⊙ mask / (1-p)
Tensor dropout(const Tensor& x, double p, bool training = true,
               CallSite site = CallSite::current());

// ---- optimizer updates: ops/inplace.cpp (in place, not differentiable) ----
// One Adam step (AdamW's decoupled decay when decoupled_weight_decay) on param and its moment
// buffers exp_avg, exp_avg_sq, at step `step` (1, 2, ...): torch.optim.Adam's update, fused.
// AMSGrad when max_exp_avg_sq is given: it keeps the largest second moment so far, and the step
// divides by that (torch.optim.Adam(amsgrad=True); composed of ops, no fused kernel).
void adam_update_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                  const Tensor& exp_avg_sq, double lr, double beta1, double beta2, double eps,
                  double weight_decay, bool decoupled_weight_decay, int64_t step,
                  const Tensor& max_exp_avg_sq = Tensor(), CallSite site = CallSite::current());
// The same with what changes between steps given as a device tensor: step_scalars float64 [3] =
// (-lr / (1 - β1^t), √(1 - β2^t), 1 - lr · weight_decay), adam_step_scalars() of
// backend/adam_step_scalars.h. A CUDA graph's replays rewrite it (autograd/cuda_graph.h).
void adam_update_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                  const Tensor& exp_avg_sq, const Tensor& step_scalars, double beta1, double beta2,
                  double eps, double weight_decay, bool decoupled_weight_decay,
                  CallSite site = CallSite::current());

// Adam's step on several parameters at once (torch.optim.Adam(foreach=True)), each with its own
// gradient, moments and step count (from 1): adam_update_ on each, with the same bits, in one
// pass over all of them where the backend has the kernel (the fast CPU backend: one job for the
// thread pool rather than one per parameter; CUDA: one kernel), one by one elsewhere. One device
// for all. With step_scalars (float64 [3] on the device, as the adam_update_ above takes) given
// for every parameter, what changes between steps is read from there and `step` and `lr` are not
// used: a CUDA graph's step, one kernel for the whole model.
struct AdamParameter {
  Tensor param, grad, exp_avg, exp_avg_sq;
  int64_t step = 0;
  Tensor step_scalars;
};
void adam_update_foreach_(const std::vector<AdamParameter>& parameters, double lr, double beta1,
                          double beta2, double eps, double weight_decay,
                          bool decoupled_weight_decay, CallSite site = CallSite::current());

// ---- losses: ops/cross_entropy.cpp ----
// logits [..., C], target int64 [...] of class indices (the class dim is LAST; for [N, C] this is
// torch's F.cross_entropy). -Σ_c q_c log softmax(logits)_c per row, with
// q = (1-ε) onehot(target) + ε/C (ε = label_smoothing); rows whose target is ignore_index count
// for nothing; reduction "mean" (over the rows not ignored), "sum" or "none" (shape [...]).
// dlogits = (softmax(logits) - q) ⊙ g / count, zero rows where ignored. Composed from the ops of
// cross_entropy_composed, or one node where the backend has a kernel for the rows (the fast CPU
// backend, float32).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index = -100,
                     double label_smoothing = 0.0, std::string_view reduction = "mean",
                     CallSite site = CallSite::current());
// The same loss composed from ops (log_softmax, gather, where, sum): its one definition, which
// cross_entropy runs where the backend has no kernel for it, and differentiates for create_graph.
Tensor cross_entropy_composed(const Tensor& logits, const Tensor& target,
                              int64_t ignore_index = -100, double label_smoothing = 0.0,
                              std::string_view reduction = "mean",
                              CallSite site = CallSite::current());
// Negative log-likelihood of log-probabilities log_probs [..., C] at target [...]
// (torch's F.nll_loss with the class dim last): -log_probs[target] per row, 0 for ignored rows,
// reduced as cross_entropy is. cross_entropy is log_softmax and then this, one definition.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index = -100,
                std::string_view reduction = "mean", CallSite site = CallSite::current());

}  // namespace sg
