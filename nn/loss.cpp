#include "nn/loss.h"

namespace sg::nn {

namespace {

void check_reduction(std::string_view op, std::string_view reduction) {
  SG_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none",
           "{}: reduction must be \"mean\", \"sum\" or \"none\", got \"{}\"", op, reduction);
}

// A classification loss's inputs, flattened to rows: one row of C scores per target.
struct Rows {
  Tensor scores;       // [N, C]
  Tensor valid;        // bool [N, 1]: the target is not ignore_index
  Tensor safe_target;  // int64 [N, 1]: the target, or 0 where ignored (gather needs a real class)
  Tensor count;        // [], the input's dtype: rows not ignored, the divisor of "mean"
};

Rows flatten_rows(std::string_view op, const Tensor& scores, const Tensor& target,
                  int64_t ignore_index) {
  SG_CHECK(scores.is_floating_point(), "{}: input must be float32 or float64, got {}", op,
           scores.dtype());
  if (scores.dtype() == kBFloat16) refuse_bfloat16(op);
  SG_CHECK(target.dtype() == kInt64, "{}: target must be an int64 tensor of class indices, got {}",
           op, target.dtype());
  SG_CHECK(scores.dim() >= 1, "{}: input must have a class dim, got a 0-d tensor", op);
  const Shape batch_shape(scores.shape().begin(), scores.shape().end() - 1);
  SG_CHECK(target.shape() == batch_shape,
           "{}: input of shape {} needs a target of shape {} (one class index per row), got {}", op,
           scores.shape(), batch_shape, target.shape());
  const int64_t C = scores.size(-1);
  // On the CPU every target is checked here; on a GPU gather's kernel checks them (Note [Index
  // checks on the device] in autograd/ops/indexing.cpp), so the loss never waits for the GPU.
  if (target.device().is_cpu()) {
    const std::vector<int64_t> values = target.to_vector<int64_t>();
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] == ignore_index) continue;
      SG_CHECK(values[i] >= 0 && values[i] < C,
               "{}: target {} (at flat position {}) is out of range for {} classes; targets must "
               "be in [0, {}) or equal ignore_index ({})",
               op, values[i], i, C, C, ignore_index);
    }
  }
  const int64_t N = target.numel();
  Rows rows;
  rows.scores = scores.reshape({N, C});
  Tensor t = target.reshape({N, 1});
  rows.valid = t != static_cast<double>(ignore_index);
  rows.safe_target = where(rows.valid, t, zeros({}, t.options()));
  rows.count = rows.valid.to(kInt64).sum().to(scores.dtype());
  return rows;
}

// per_row [N, 1] -> [] ("mean" over the rows not ignored, or "sum") or the target's shape.
Tensor reduce(const Tensor& per_row, std::string_view reduction, const Shape& target_shape,
              const Tensor& count) {
  if (reduction == "none") return per_row.reshape(target_shape);
  if (reduction == "sum") return per_row.sum();
  return per_row.sum() / count;  // 0 / 0 = NaN with nothing left, as torch
}

}  // namespace

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index,
                std::string_view reduction) {
  check_reduction("nll_loss", reduction);
  Rows rows = flatten_rows("nll_loss", log_probs, target, ignore_index);
  Tensor picked = gather(rows.scores, 1, rows.safe_target);  // [N, 1] log p of each target
  // where(), not a multiply by a 0/1 mask: an ignored row may hold -inf, and 0 * -inf is NaN.
  Tensor per_row = where(rows.valid, -picked, zeros({}, picked.options()));
  return reduce(per_row, reduction, target.shape(), rows.count);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, std::string_view reduction) {
  check_reduction("mse_loss", reduction);
  SG_CHECK(input.shape() == target.shape(),
           "mse_loss: input and target must have the same shape, got {} and {}; broadcasting "
           "them would compare every pair (reshape one of them)",
           input.shape(), target.shape());
  SG_CHECK(input.is_floating_point() && target.is_floating_point(),
           "mse_loss: input and target must be float tensors, got {} and {}", input.dtype(),
           target.dtype());
  if (input.dtype() == kBFloat16 || target.dtype() == kBFloat16) refuse_bfloat16("mse_loss");
  Tensor diff = input - target;
  Tensor squared = diff * diff;
  if (reduction == "none") return squared;
  return reduction == "sum" ? squared.sum() : squared.mean();
}

CrossEntropyLoss::CrossEntropyLoss(int64_t ignore_index_, double label_smoothing_,
                                   std::string reduction_)
    : Module("CrossEntropyLoss"),
      ignore_index(ignore_index_),
      label_smoothing(label_smoothing_),
      reduction(std::move(reduction_)) {
  check_reduction("CrossEntropyLoss", reduction);
  SG_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
           "CrossEntropyLoss: label_smoothing must be in [0, 1], got {}", label_smoothing);
}

Tensor CrossEntropyLoss::forward(const Tensor& logits, const Tensor& target) const {
  return cross_entropy(logits, target, ignore_index, label_smoothing, reduction);
}

std::string CrossEntropyLoss::extra_repr() const {
  return fmt::format("ignore_index={}, label_smoothing={}, reduction='{}'", ignore_index,
                     label_smoothing, reduction);
}

}  // namespace sg::nn
