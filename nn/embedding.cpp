#include "nn/embedding.h"

#include "nn/init.h"

namespace sg::nn {

Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> pad)
    : UnaryModule("Embedding"), num_embeddings(num), embedding_dim(dim), padding_idx(pad) {
  SG_CHECK(num > 0 && dim > 0, "Embedding: sizes must be positive, got {} x {}", num, dim);
  if (padding_idx) {
    SG_CHECK(*padding_idx >= -num && *padding_idx < num,
             "Embedding: padding_idx {} is out of range for {} embeddings", *padding_idx, num);
    if (*padding_idx < 0) padding_idx = *padding_idx + num;
  }
  weight = register_parameter("weight", empty({num, dim}));
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).zero_();
  }
}

Tensor Embedding::forward(const Tensor& ids) {
  SG_CHECK(ids.dtype() == kInt64, "Embedding: token ids must be int64, got {} of shape {}",
           ids.dtype(), ids.shape());
  return call_forward_hooks(embedding(weight, ids, padding_idx));
}

std::string Embedding::extra_repr() const {
  std::string s = fmt::format("{}, {}", num_embeddings, embedding_dim);
  if (padding_idx) s += fmt::format(", padding_idx={}", *padding_idx);
  return s;
}

}  // namespace sg::nn
