#include "nn/init.h"

#include <cmath>

namespace sg::nn::init {

Fans fans_of(const Tensor& weight) {
  SG_CHECK(weight.dim() >= 2,
           "init: fan in and fan out need a tensor with at least 2 dims, got shape {}",
           weight.shape());
  int64_t receptive = 1;
  for (int64_t d = 2; d < weight.dim(); ++d) receptive *= weight.size(d);
  return {weight.size(1) * receptive, weight.size(0) * receptive};
}

Tensor& uniform_(Tensor& t, double low, double high) {
  NoGradGuard no_grad;
  t.uniform_(low, high);
  return t;
}

Tensor& normal_(Tensor& t, double mean, double std) {
  NoGradGuard no_grad;
  t.normal_(mean, std);
  return t;
}

Tensor& constant_(Tensor& t, double value) {
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}
Tensor& zeros_(Tensor& t) { return constant_(t, 0.0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1.0); }

Tensor& xavier_uniform_(Tensor& t, double gain) {
  Fans f = fans_of(t);
  double bound = gain * std::sqrt(6.0 / static_cast<double>(f.fan_in + f.fan_out));
  return uniform_(t, -bound, bound);
}

Tensor& xavier_normal_(Tensor& t, double gain) {
  Fans f = fans_of(t);
  return normal_(t, 0.0, gain * std::sqrt(2.0 / static_cast<double>(f.fan_in + f.fan_out)));
}

Tensor& kaiming_uniform_(Tensor& t, double a) {
  double gain = std::sqrt(2.0 / (1.0 + a * a));
  double bound = std::sqrt(3.0) * gain / std::sqrt(static_cast<double>(fans_of(t).fan_in));
  return uniform_(t, -bound, bound);
}

Tensor& kaiming_normal_(Tensor& t, double a) {
  double gain = std::sqrt(2.0 / (1.0 + a * a));
  return normal_(t, 0.0, gain / std::sqrt(static_cast<double>(fans_of(t).fan_in)));
}

}  // namespace sg::nn::init
