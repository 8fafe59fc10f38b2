// The position-wise feed-forward block of a Transformer layer: the same two-layer MLP applied to
// every position on its own, linear2(dropout(activation(linear1(x)))). d_ff is usually 4 d_model.
// The layer around it adds its own dropout to the block's output before the residual sum, as in
// torch.nn.TransformerEncoderLayer.
//   sg::nn::FeedForward ffn(/*d_model=*/512, /*d_ff=*/2048, /*dropout=*/0.1, "gelu");
//   auto y = ffn(x);   // x [B, T, 512] -> y [B, T, 512]
#pragma once

#include <memory>
#include <string>

#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/module.h"

namespace sg::nn {

class FeedForward : public UnaryModule {
 public:
  // activation: "relu" (the paper) or "gelu" (BERT, GPT).
  FeedForward(int64_t d_model, int64_t d_ff, double dropout = 0.0, std::string activation = "relu");
  Tensor forward(const Tensor& x) override;

  int64_t d_model, d_ff;
  std::string activation;
  std::shared_ptr<Linear> linear1;  // d_model -> d_ff
  std::shared_ptr<UnaryModule> activation_fn;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<Linear> linear2;  // d_ff -> d_model
};

}  // namespace sg::nn
