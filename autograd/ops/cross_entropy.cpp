// cross_entropy: softmax, log, pick the target and average, as one op.
//
// For one row of logits x [C] and its target class t, with label smoothing ε the target is a
// distribution q = (1 - ε) onehot(t) + ε / C, and the loss is
//   L = -Σ_c q_c log softmax(x)_c = (1 - ε) (-log p_t) + ε (-Σ_c log p_c) / C.
// Its gradient is the famous one line
//   dL/dx = softmax(x) - q
// because Σ_c q_c = 1.
//
// Rows whose target equals ignore_index (padding) contribute nothing: no loss and a zero gradient
// row. "mean" divides by the number of rows that are NOT ignored, so a batch with more padding
// does not get a smaller loss; with no such rows the mean is 0 / 0 = NaN, as in PyTorch.
//
// The loss is defined once, from ops: cross_entropy_composed (log_softmax, gather, a sum for the
// smoothing, where, the reduction), whose gradient autograd derives. That is the version to read,
// what runs on the reference CPU kernels and the GPU, and what a backward with create_graph
// differentiates. Where the backend has a kernel for the rows (the fast CPU backend's, float32:
// backend/cpu_fast/cross_entropy.cpp, which writes softmax - q by hand) the op records one node
// instead: a language model's logits [B·T, V] are the largest tensor of the step, walked then
// once forward and once backward instead of through four nodes and four [N, C] temporaries.
#include "autograd/ops/internal.h"

namespace sg {

namespace {

enum class Reduction { None, Mean, Sum };

Reduction parse_reduction(std::string_view op, std::string_view reduction) {
  if (reduction == "mean") return Reduction::Mean;
  if (reduction == "sum") return Reduction::Sum;
  if (reduction == "none") return Reduction::None;
  SG_FAIL("{}: reduction must be \"mean\", \"sum\" or \"none\", got \"{}\"", op, reduction);
}

// The checks both entry points make, errors named after `op`. On the CPU every target is checked
// here, so the error names the first bad one; on a GPU gather's kernel checks them (Note [Index
// checks on the device] in ops/indexing.cpp), and the loss never waits for the GPU.
// `scores` are logits (cross_entropy) or log-probabilities (nll_loss), named `scores_name`.
Reduction check_arguments(std::string_view op, std::string_view scores_name, const Tensor& logits,
                          const Tensor& target, int64_t ignore_index, double label_smoothing,
                          std::string_view reduction) {
  const Reduction mode = parse_reduction(op, reduction);
  SG_CHECK(logits.is_floating_point(), "{}: {} must be float32 or float64, got {}", op, scores_name,
           logits.dtype());
  detail::check_not_bfloat16(op, {logits});
  SG_CHECK(target.dtype() == kInt64, "{}: target must be an int64 tensor of class indices, got {}",
           op, target.dtype());
  SG_CHECK(logits.dim() >= 1, "{}: {} must have a class dim, got a 0-d tensor", op, scores_name);
  const Shape batch_shape(logits.shape().begin(), logits.shape().end() - 1);
  SG_CHECK(target.shape() == batch_shape,
           "{}: {} of shape {} need a target of shape {} (one class index per row of {}), got {}",
           op, scores_name, logits.shape(), batch_shape, scores_name, target.shape());
  SG_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
           "{}: label_smoothing must be in [0, 1], got {}", op, label_smoothing);
  detail::check_same_device(op, {logits, target});
  const int64_t C = logits.size(-1);
  SG_CHECK(C > 0, "{}: {} of shape {} have no classes", op, scores_name, logits.shape());
  if (target.device().is_cpu()) {
    const std::vector<int64_t> values = target.to_vector<int64_t>();
    for (size_t i = 0; i < values.size(); ++i) {
      const int64_t t = values[i];
      SG_CHECK(t == ignore_index || (t >= 0 && t < C),
               "{}: target {} (at flat position {}) is out of range for {} classes; targets must "
               "be in [0, {}) or equal ignore_index ({})",
               op, t, i, C, C, ignore_index);
    }
  }
  return mode;
}

// -log p of each row's target under log-probabilities [N, C] (the arguments checked), with label
// smoothing ε the cross-entropy with q = (1 - ε) onehot(t) + ε / C, ignored rows zero, reduced:
// the one definition of both losses. nll_loss is this on the caller's log-probabilities (ε = 0),
// cross-entropy this after log_softmax.
Tensor nll_of_log_probs(const Tensor& log_probs, const Tensor& target, int64_t ignore_index,
                        double eps, Reduction mode) {
  // --8<-- [start:ex06.cross_entropy]
  const int64_t C = log_probs.size(1);
  const Tensor t = target.reshape({target.numel(), 1});
  const Tensor valid = t.ne(static_cast<double>(ignore_index));        // bool [N, 1]
  const Tensor safe_target = where(valid, t, zeros({}, t.options()));  // ignored rows: class 0
  Tensor row_loss = gather(log_probs, 1, safe_target) * -(1.0 - eps);  // (1 - ε)(-log p_t)
  if (eps > 0) row_loss = row_loss - log_probs.sum({1}, /*keepdim=*/true) * (eps / C);
  // where(), not a multiply by a 0/1 mask: an ignored row may hold -inf, and 0 · -inf is NaN.
  row_loss = where(valid, row_loss, zeros({}, row_loss.options()));  // [N, 1]
  if (mode == Reduction::None) return row_loss.reshape(target.shape());
  if (mode == Reduction::Sum) return row_loss.sum();
  const Tensor count = valid.to(kInt64).sum().to(log_probs.dtype());  // exact, then rounded once
  return row_loss.sum() / count;                                      // 0 / 0 = NaN: all ignored
  // --8<-- [end:ex06.cross_entropy]
}

// Cross-entropy from ops: log_softmax over the classes, then the loss above.
Tensor composed(const Tensor& logits, const Tensor& target, int64_t ignore_index, double eps,
                Reduction mode) {
  const int64_t C = logits.size(-1), N = target.numel();
  return nll_of_log_probs(log_softmax(logits.reshape({N, C}), 1), target, ignore_index, eps, mode);
}

// The loss as one node where the backend has a kernel for it (the CPU's, for float32): the row
// losses and their gradient in one pass each. Undefined where there is none. The backward with
// create_graph differentiates the composed loss instead (the node saved values, not functions of
// the logits).
Tensor cross_entropy_by_kernel(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                               double eps, Reduction mode) {
  const int64_t C = logits.size(-1), N = target.numel();
  Tensor x = logits.detach().reshape({N, C}).contiguous();
  Tensor t = target.detach().reshape({N}).contiguous();
  Tensor log_probs = empty({N, C}, logits.options());
  Tensor row_loss = empty({N}, logits.options());
  if (!backend_for(logits.device()).cross_entropy(x, t, ignore_index, eps, log_probs, row_loss)) {
    return Tensor();
  }
  int64_t kept = 0;  // the divisor of "mean": the targets are on the host (checked above)
  for (const int64_t v : t.to_vector<int64_t>()) kept += v != ignore_index;
  const double divisor = mode == Reduction::Mean ? static_cast<double>(kept) : 1.0;
  Tensor out;
  {
    NoGradGuard no_grad;
    out = mode == Reduction::None  ? row_loss.view(target.shape())
          : mode == Reduction::Sum ? row_loss.sum()
                                   : row_loss.sum() / divisor;  // 0 / 0 = NaN when all are ignored
  }
  return record(
      "cross_entropy", out, {logits, target},
      [slp = SavedTensor(log_probs), st = SavedTensor(t), ignore_index, eps,
       divisor = std::max(divisor, 1.0), logits_shape = logits.shape(),
       slogits = SavedTensor(logits), starget = SavedTensor(target), mode](const Tensor& g) {
        if (is_grad_enabled()) {  // create_graph
          return detail::composed_backward(
              [ignore_index, eps, mode](const std::vector<Tensor>& in) {
                return composed(in[0], in[1], ignore_index, eps, mode);
              },
              {slogits.get(), starget.get()}, g);
        }
        const Tensor& lp = slp.get();
        Tensor dx = empty(lp.shape(), lp.options());
        const bool done = backend_for(dx.device())
                              .cross_entropy_backward(lp, st.get(), g.to(lp.dtype()).contiguous(),
                                                      divisor, ignore_index, eps, dx);
        SG_CHECK(done, "cross_entropy: the backend ran the forward but not the backward");
        return Grads{dx.view(logits_shape), Tensor()};
      });
}

}  // namespace

Tensor cross_entropy_composed(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                              double label_smoothing, std::string_view reduction, CallSite site) {
  const CallSiteScope call_site(site);
  const Reduction mode = check_arguments("cross_entropy_composed", "logits", logits, target,
                                         ignore_index, label_smoothing, reduction);
  const detail::IndexErrorsNamed targets_are_checked_as("cross_entropy");  // on a GPU
  return composed(logits, target, ignore_index, label_smoothing, mode);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                     double label_smoothing, std::string_view reduction, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("cross_entropy");
  const Reduction mode = check_arguments("cross_entropy", "logits", logits, target, ignore_index,
                                         label_smoothing, reduction);
  if (target.device().is_cpu()) {
    Tensor out = cross_entropy_by_kernel(logits, target, ignore_index, label_smoothing, mode);
    if (out.defined()) return out;
  }
  const detail::IndexErrorsNamed targets_are_checked_as("cross_entropy");  // on a GPU
  return composed(logits, target, ignore_index, label_smoothing, mode);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index,
                std::string_view reduction, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("nll_loss");
  const Reduction mode =
      check_arguments("nll_loss", "log_probs", log_probs, target, ignore_index, 0.0, reduction);
  const detail::IndexErrorsNamed targets_are_checked_as("nll_loss");  // on a GPU
  const int64_t C = log_probs.size(-1), N = target.numel();
  return nll_of_log_probs(log_probs.reshape({N, C}), target, ignore_index, 0.0, mode);
}

}  // namespace sg
