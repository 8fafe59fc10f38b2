#include "nn/positional_encoding.h"

#include <cmath>
#include <vector>

#include "nn/init.h"

namespace sg::nn {

Tensor PositionalEncoding::add_rows(const Tensor& x, const Tensor& table, int64_t start) const {
  SG_CHECK(x.dim() == 3 && x.size(2) == d_model, "{}: expected input of shape [B, T, {}], got {}",
           type_name(), d_model, x.shape());
  const int64_t T = x.size(1);
  SG_CHECK(start >= 0 && start + T <= max_len,
           "{}: positions {}..{} do not fit max_len {} (sequence of length {} starting at {})",
           type_name(), start, start + T - 1, max_len, T, start);
  // Rows start..start+T-1 of the table, [T, D], broadcast over the batch.
  return x + table.narrow(0, start, T);
}

std::string PositionalEncoding::extra_repr() const {
  return fmt::format("d_model={}, max_len={}", d_model, max_len);
}

SinusoidalPositionalEncoding::SinusoidalPositionalEncoding(int64_t d_model_, int64_t max_len_)
    : PositionalEncoding("SinusoidalPositionalEncoding") {
  d_model = d_model_;
  max_len = max_len_;
  SG_CHECK(d_model > 0 && max_len > 0,
           "SinusoidalPositionalEncoding: d_model and max_len must be positive, got {} and {}",
           d_model, max_len);
  // Column pair (2i, 2i+1) is a sine and a cosine of frequency 1 / 10000^(2i/D): wavelengths run
  // from 2π to 10000·2π, and pe[t + k] is a linear function (a rotation) of pe[t] for every k.
  // empty() checks the size max_len * d_model (an error, not a wrapped product and a short table).
  Tensor values = empty({max_len, d_model}, kFloat64);
  double* table = values.data_ptr<double>();
  // --8<-- [start:ex10.sinusoidal_table]
  for (int64_t t = 0; t < max_len; ++t) {
    for (int64_t i = 0; i < d_model; i += 2) {
      const double angle =
          static_cast<double>(t) *
          std::exp(-static_cast<double>(i) * std::log(10000.0) / static_cast<double>(d_model));
      table[t * d_model + i] = std::sin(angle);
      if (i + 1 < d_model) table[t * d_model + i + 1] = std::cos(angle);
    }
  }
  // --8<-- [end:ex10.sinusoidal_table]
  pe = register_buffer("pe", values.to(kFloat32));
}

Tensor SinusoidalPositionalEncoding::forward(const Tensor& x, int64_t start) {
  return call_forward_hooks(add_rows(x, pe, start));
}

LearnedPositionalEncoding::LearnedPositionalEncoding(int64_t d_model_, int64_t max_len_)
    : PositionalEncoding("LearnedPositionalEncoding") {
  d_model = d_model_;
  max_len = max_len_;
  SG_CHECK(d_model > 0 && max_len > 0,
           "LearnedPositionalEncoding: d_model and max_len must be positive, got {} and {}",
           d_model, max_len);
  weight = register_parameter("weight", empty({max_len, d_model}));
  init::normal_(weight);
}

Tensor LearnedPositionalEncoding::forward(const Tensor& x, int64_t start) {
  // Row t of the table belongs to position t. (Looking it up by token id instead, as one
  // tutorial's decoder does, gives "position" vectors that say nothing about order.)
  return call_forward_hooks(add_rows(x, weight, start));
}

}  // namespace sg::nn
