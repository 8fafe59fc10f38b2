// Embedding: a lookup table of V vectors of size D. ids of any shape [...] -> [..., D].
// Weight initialised N(0, 1) as torch.nn.Embedding; the padding_idx row starts at zero and never
// receives gradient, so the padding token stays the zero vector.
//   sg::nn::Embedding emb(/*num_embeddings=*/11, /*embedding_dim=*/32, /*padding_idx=*/0);
//   auto e = emb(tokens);   // tokens [B, T] int64 -> e [B, T, 32]
#pragma once

#include <optional>

#include "nn/module.h"

namespace sg::nn {

class Embedding : public UnaryModule {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim,
            std::optional<int64_t> padding_idx = std::nullopt);
  Tensor forward(const Tensor& ids) override;

  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;
  Tensor weight;  // [V, D]

 protected:
  std::string extra_repr() const override;
};

}  // namespace sg::nn
