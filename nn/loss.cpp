#include "nn/loss.h"

namespace sg::nn {

namespace {

void check_reduction(std::string_view op, std::string_view reduction) {
  SG_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none",
           "{}: reduction must be \"mean\", \"sum\" or \"none\", got \"{}\"", op, reduction);
}

}  // namespace

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
