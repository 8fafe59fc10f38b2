// Positional encodings: attention alone does not know the order of its inputs, so each position
// t gets a vector p_t added to its embedding. Two kinds, both indexed by POSITION (0, 1, 2, ...),
// never by token id:
//   sinusoidal (the paper): a fixed table, pe[t, 2i] = sin(t / 10000^(2i/D)),
//                                          pe[t, 2i+1] = cos(t / 10000^(2i/D));
//   learned (BERT, GPT): a trained [max_len, D] table, like an Embedding looked up by position.
//   sg::nn::SinusoidalPositionalEncoding pos(/*d_model=*/512);
//   auto y = pos(x);            // x [B, T, 512] -> x + pe[0:T]
//   auto z = pos(x_step, 7);    // while decoding one step at a time: x + pe[7:7+T]
#pragma once

#include "nn/module.h"

namespace sg::nn {

// What the Transformer holds: either kind, called the same way.
class PositionalEncoding : public Module {
 public:
  using Module::Module;
  // x [B, T, D] -> x + table[start : start + T]; an error if start + T exceeds max_len.
  virtual Tensor forward(const Tensor& x, int64_t start = 0) = 0;
  Tensor operator()(const Tensor& x, int64_t start = 0) { return forward(x, start); }
  int64_t d_model = 0, max_len = 0;

 protected:
  Tensor add_rows(const Tensor& x, const Tensor& table, int64_t start) const;
  std::string extra_repr() const override;
};

class SinusoidalPositionalEncoding : public PositionalEncoding {
 public:
  explicit SinusoidalPositionalEncoding(int64_t d_model, int64_t max_len = 5000);
  Tensor forward(const Tensor& x, int64_t start = 0) override;  // NOLINT(google-default-arguments)
  Tensor pe;  // buffer [max_len, D]: saved and moved with the module, never trained
};

class LearnedPositionalEncoding : public PositionalEncoding {
 public:
  LearnedPositionalEncoding(int64_t d_model, int64_t max_len);
  Tensor forward(const Tensor& x, int64_t start = 0) override;  // NOLINT(google-default-arguments)
  Tensor weight;  // parameter [max_len, D], initialised N(0, 1) as an Embedding
};

}  // namespace sg::nn
