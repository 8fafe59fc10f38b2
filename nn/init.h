// Parameter initialisers matching PyTorch's torch.nn.init (same formulas and defaults).
//   sg::nn::init::kaiming_uniform_(linear_weight, std::sqrt(5.0));   // what nn.Linear does
//   sg::nn::init::xavier_uniform_(w);                                // what the Transformer uses
// Fan-in/fan-out of a [out, in, ...] weight: fan_in = in * receptive, fan_out = out * receptive.
#pragma once

#include "autograd/autograd.h"

namespace sg::nn::init {

struct Fans {
  int64_t fan_in = 0, fan_out = 0;
};
Fans fans_of(const Tensor& weight);

// Each writes in place under NoGradGuard and returns its argument.
Tensor& uniform_(Tensor& t, double low = 0.0, double high = 1.0);
Tensor& normal_(Tensor& t, double mean = 0.0, double std = 1.0);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
Tensor& constant_(Tensor& t, double value);
// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
Tensor& xavier_uniform_(Tensor& t, double gain = 1.0);
// N(0, std) with std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor& xavier_normal_(Tensor& t, double gain = 1.0);
// U(-b, b) with b = sqrt(3) * gain / sqrt(fan_in) and gain = sqrt(2 / (1 + a²)) (leaky_relu).
Tensor& kaiming_uniform_(Tensor& t, double a = 0.0);
// N(0, std) with std = gain / sqrt(fan_in).
Tensor& kaiming_normal_(Tensor& t, double a = 0.0);

}  // namespace sg::nn::init
