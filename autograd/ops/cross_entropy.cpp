// cross_entropy: softmax, log, pick the target and average, fused into one node.
//
// For one row of logits x [C] and its target class t, with label smoothing ε the target is a
// distribution q = (1 - ε) onehot(t) + ε / C, and the loss is
//   L = -Σ_c q_c log softmax(x)_c = (1 - ε) (-log p_t) + ε (-Σ_c log p_c) / C.
// Its gradient is the famous one line
//   dL/dx = softmax(x) - q
// because Σ_c q_c = 1. Composed from log_softmax, gather and mean, autograd would get the same
// answer through four nodes and four [N, C] temporaries; a language model's logits [B·T, V] are
// the largest tensor of the step, so here they are walked once forward and once backward.
//
// Rows whose target equals ignore_index (padding) contribute nothing: no loss and a zero gradient
// row. "mean" divides by the number of rows that are NOT ignored, so a batch with more padding
// does not get a smaller loss; with no such rows the mean is 0 / 0 = NaN, as in PyTorch. That
// count is a 0-d tensor on the logits' device, and on a GPU the targets are checked by the gather
// kernel (Note [Index checks on the device] in ops/indexing.cpp): the loss never waits for the GPU.
// Where the backend has a kernel for the rows (the CPU's, float32:
// backend/cpu_fast/cross_entropy.cpp) each direction is one pass over them; elsewhere (float64, the
// GPU) the code below composes the same math from the backend's softmax, gather and scatter_add.
// nn/loss.cpp has the same loss composed from primitives (cross_entropy_composed), which the tests
// compare with this one, values and gradients.
#include "autograd/ops/internal.h"

namespace sg {

namespace {

enum class Reduction { None, Mean, Sum };

Reduction parse_reduction(std::string_view reduction) {
  if (reduction == "mean") return Reduction::Mean;
  if (reduction == "sum") return Reduction::Sum;
  if (reduction == "none") return Reduction::None;
  SG_FAIL("cross_entropy: reduction must be \"mean\", \"sum\" or \"none\", got \"{}\"", reduction);
}

// Checks every CPU target on the host, so the error names the first bad one; returns how many
// rows are not ignored (the divisor of "mean").
int64_t check_targets(const Tensor& target, int64_t C, int64_t ignore_index) {
  const std::vector<int64_t> values = target.to_vector<int64_t>();
  int64_t kept = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t t = values[i];
    if (t == ignore_index) continue;
    SG_CHECK(t >= 0 && t < C,
             "cross_entropy: target {} (at flat position {}) is out of range for {} classes; "
             "targets must be in [0, {}) or equal ignore_index ({})",
             t, i, C, C, ignore_index);
    ++kept;
  }
  return kept;
}

// The loss where the backend has a kernel for it (the CPU's, for float32): the row losses and
// their gradient in one pass each, the divisor of "mean" counted on the host (`kept`).
// Undefined where there is none.
// The loss as ops, the version a backward with create_graph differentiates (composed_backward):
// the fused backwards below start from the saved log-probabilities, values rather than functions
// of the logits. `kept` is the divisor of "mean", fixed at the forward.
Tensor composed_cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                              double eps, Reduction mode, int64_t kept) {
  const int64_t C = logits.size(-1), N = target.numel();
  const Tensor log_probs = log_softmax(logits.reshape({N, C}), 1);
  const Tensor t = target.reshape({N, 1});
  const Tensor valid = t.ne(static_cast<double>(ignore_index));
  const Tensor safe_target = where(valid, t, zeros({}, t.options()));
  Tensor row_loss = gather(log_probs, 1, safe_target) * -(1.0 - eps);
  if (eps > 0) row_loss = row_loss - log_probs.sum({1}, /*keepdim=*/true) * (eps / C);
  row_loss = where(valid, row_loss, zeros({}, row_loss.options()));
  if (mode == Reduction::None) return row_loss.reshape(target.shape());
  if (mode == Reduction::Sum) return row_loss.sum();
  return row_loss.sum() / static_cast<double>(kept);
}

Tensor cross_entropy_by_kernel(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                               double eps, Reduction mode, int64_t kept) {
  const int64_t C = logits.size(-1), N = target.numel();
  Tensor x = logits.detach().reshape({N, C}).contiguous();
  Tensor t = target.detach().reshape({N}).contiguous();
  Tensor log_probs = empty({N, C}, logits.options());
  Tensor row_loss = empty({N}, logits.options());
  if (!backend_for(logits.device()).cross_entropy(x, t, ignore_index, eps, log_probs, row_loss)) {
    return Tensor();
  }
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
       slogits = SavedTensor(logits), starget = SavedTensor(target), mode, kept](const Tensor& g) {
        if (is_grad_enabled()) {  // create_graph
          return detail::composed_backward(
              [ignore_index, eps, mode, kept](const std::vector<Tensor>& in) {
                return composed_cross_entropy(in[0], in[1], ignore_index, eps, mode, kept);
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

Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                     double label_smoothing, std::string_view reduction, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("cross_entropy");
  const Reduction mode = parse_reduction(reduction);
  SG_CHECK(logits.is_floating_point(), "cross_entropy: logits must be float32 or float64, got {}",
           logits.dtype());
  detail::check_not_bfloat16("cross_entropy", {logits});
  SG_CHECK(target.dtype() == kInt64,
           "cross_entropy: target must be an int64 tensor of class indices, got {}",
           target.dtype());
  SG_CHECK(logits.dim() >= 1, "cross_entropy: logits must have a class dim, got a 0-d tensor");
  const Shape batch_shape(logits.shape().begin(), logits.shape().end() - 1);
  SG_CHECK(target.shape() == batch_shape,
           "cross_entropy: logits of shape {} need a target of shape {} (one class index per "
           "row of logits), got {}",
           logits.shape(), batch_shape, target.shape());
  SG_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
           "cross_entropy: label_smoothing must be in [0, 1], got {}", label_smoothing);
  detail::check_same_device("cross_entropy", {logits, target});
  const int64_t C = logits.size(-1);
  SG_CHECK(C > 0, "cross_entropy: logits of shape {} have no classes", logits.shape());
  const int64_t N = target.numel();
  const double eps = label_smoothing;
  if (target.device().is_cpu()) {
    const int64_t kept = check_targets(target, C, ignore_index);
    Tensor out = cross_entropy_by_kernel(logits, target, ignore_index, eps, mode, kept);
    if (out.defined()) return out;
  }

  Tensor out;
  Tensor log_probs = empty({N, C}, logits.options());  // [N, C]
  Tensor keep;                                         // [N, 1] 1 for used rows, 0 for ignored
  Tensor safe_target;                                  // [N, 1], ignored rows point at class 0
  Tensor count;  // [], logits' dtype: the rows not ignored, the divisor of "mean"
  {
    NoGradGuard no_grad;
    Tensor x = logits.detach().reshape({N, C}).contiguous();
    backend_for(logits.device()).softmax(x, 1, /*log=*/true, log_probs);
    Tensor t = target.detach().reshape({N, 1});
    Tensor valid = t.ne(static_cast<double>(ignore_index));  // bool [N, 1]
    safe_target = where(valid, t, zeros({}, t.options())).contiguous();
    keep = valid.to(logits.dtype());
    count = valid.to(kInt64).sum().to(logits.dtype());  // exact in int64, then rounded once

    // Per-row loss [N, 1]: (1 - ε)(-log p_t) + ε (-Σ_c log p_c) / C, zero where ignored.
    Tensor picked = empty({N, 1}, logits.options());  // log p_t; the kernel checks the targets
    backend_for(logits.device()).gather(log_probs, 1, safe_target, picked, "cross_entropy");
    Tensor row_loss = -picked * (1.0 - eps);
    if (eps > 0) row_loss = row_loss - log_probs.sum({1}, /*keepdim=*/true) * (eps / C);
    row_loss = where(valid, row_loss, zeros({}, row_loss.options()));  // kills inf/NaN too
    switch (mode) {
      case Reduction::None:
        out = row_loss.reshape(target.shape());
        break;
      case Reduction::Sum:
        out = row_loss.sum();
        break;
      case Reduction::Mean:
        out = row_loss.sum() / count;  // 0 / 0 = NaN when all are ignored
        break;
    }
  }

  return record(
      "cross_entropy", out, {logits, target},
      [slp = SavedTensor(log_probs), skeep = SavedTensor(keep), st = SavedTensor(safe_target),
       scount = SavedTensor(count), mode, eps, logits_shape = logits.shape(),
       slogits = SavedTensor(logits), starget = SavedTensor(target),
       ignore_index](const Tensor& g) {
        if (is_grad_enabled()) {  // create_graph
          const int64_t kept = scount.get().to(kInt64).item<int64_t>();
          return detail::composed_backward(
              [ignore_index, eps, mode, kept](const std::vector<Tensor>& in) {
                return composed_cross_entropy(in[0], in[1], ignore_index, eps, mode, kept);
              },
              {slogits.get(), starget.get()}, g);
        }
        // --8<-- [start:ex06.cross_entropy_backward]
        const Tensor& lp = slp.get();
        const int64_t rows = lp.size(0), classes = lp.size(1);
        // dx = softmax - q = exp(log p) - ε/C everywhere, then - (1 - ε) at the target.
        Tensor dx = lp.exp();
        if (eps > 0) dx.add_(-eps / static_cast<double>(classes));
        backend_for(dx.device())
            .scatter_add(dx, 1, st.get(), full({rows, 1}, -(1.0 - eps), dx.options()));
        // Each row scaled by its share of g: g_i (none), g (sum) or g / count (mean), and 0 for
        // ignored rows. With every row ignored the mean's gradient is 0, as in PyTorch.
        Tensor row_scale =
            mode == Reduction::None ? g.reshape({rows, 1}) * skeep.get() : g * skeep.get();
        if (mode == Reduction::Mean) {
          row_scale = row_scale / scount.get().clamp(1.0, std::nullopt);
        }
        dx.mul_(row_scale);
        return Grads{dx.view(logits_shape), Tensor()};
        // --8<-- [end:ex06.cross_entropy_backward]
      });
}

}  // namespace sg
