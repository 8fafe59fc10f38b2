// The Tensor methods that are ops (x.view(...), x.exp(), x.sum(), x.matmul(y), ...) and the
// arithmetic and comparison operators: each forwards to its function in autograd/ops.h, carrying
// the caller's call site (anomaly mode names it) where the method takes one.
#include "autograd/ops.h"
#include "autograd/tensor.h"

namespace sg {

Tensor Tensor::view(const Shape& s, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::view(*this, s);
}
Tensor Tensor::reshape(const Shape& s, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::reshape(*this, s);
}
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim, CallSite site) const {
  const CallSiteScope call_site(site);
  if (dim() == 0) return reshape({1});
  int64_t s = normalize_dim("flatten", start_dim, dim());
  int64_t e = normalize_dim("flatten", end_dim, dim());
  SG_CHECK(s <= e, "flatten: start_dim {} comes after end_dim {}", start_dim, end_dim);
  Shape out(shape().begin(), shape().begin() + s);
  int64_t merged = 1;
  for (int64_t d = s; d <= e; ++d) merged *= shape()[d];
  out.push_back(merged);
  out.insert(out.end(), shape().begin() + e + 1, shape().end());
  return reshape(out);
}
Tensor Tensor::transpose(int64_t d0, int64_t d1, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::transpose(*this, d0, d1);
}
Tensor Tensor::t(CallSite site) const {
  const CallSiteScope call_site(site);
  SG_CHECK(dim() <= 2, "t: expects a tensor with <= 2 dims, got shape {}", shape());
  return dim() < 2 ? *this : transpose(0, 1);
}
Tensor Tensor::permute(const std::vector<int64_t>& dims, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::permute(*this, dims);
}
Tensor Tensor::unsqueeze(int64_t d, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::unsqueeze(*this, d);
}
Tensor Tensor::squeeze(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::squeeze(*this);
}
Tensor Tensor::squeeze(int64_t d, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::squeeze(*this, d);
}
Tensor Tensor::expand(const Shape& s, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::expand(*this, s);
}
Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::narrow(*this, d, start, length);
}
Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::slice(*this, d, start, end, step);
}
Tensor Tensor::select(int64_t d, int64_t index, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::select(*this, d, index);
}

Tensor Tensor::neg(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::neg(*this);
}
Tensor Tensor::exp(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::exp(*this);
}
Tensor Tensor::log(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::log(*this);
}
Tensor Tensor::sqrt(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::sqrt(*this);
}
Tensor Tensor::rsqrt(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::rsqrt(*this);
}
Tensor Tensor::abs(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::abs(*this);
}
Tensor Tensor::tanh(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::tanh(*this);
}
Tensor Tensor::sigmoid(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::sigmoid(*this);
}
Tensor Tensor::relu(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::relu(*this);
}
Tensor Tensor::pow(double e, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::pow(*this, e);
}
Tensor Tensor::pow(const Tensor& e, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::pow(*this, e);
}
Tensor Tensor::clamp(std::optional<double> lo, std::optional<double> hi, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::clamp(*this, lo, hi);
}
Tensor Tensor::logical_not(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::logical_not(*this);
}
Tensor Tensor::eq(const Tensor& o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::eq(*this, o);
}
Tensor Tensor::ne(const Tensor& o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::ne(*this, o);
}
Tensor Tensor::lt(const Tensor& o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::lt(*this, o);
}
Tensor Tensor::le(const Tensor& o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::le(*this, o);
}
Tensor Tensor::gt(const Tensor& o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::gt(*this, o);
}
Tensor Tensor::ge(const Tensor& o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::ge(*this, o);
}
Tensor Tensor::eq(double o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::eq(*this, scalar_like(*this, o));
}
Tensor Tensor::ne(double o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::ne(*this, scalar_like(*this, o));
}
Tensor Tensor::lt(double o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::lt(*this, scalar_like(*this, o));
}
Tensor Tensor::le(double o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::le(*this, scalar_like(*this, o));
}
Tensor Tensor::gt(double o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::gt(*this, scalar_like(*this, o));
}
Tensor Tensor::ge(double o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::ge(*this, scalar_like(*this, o));
}

Tensor Tensor::sum(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::sum(*this);
}
Tensor Tensor::sum(const Dims& dims, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::sum(*this, dims, keepdim);
}
Tensor Tensor::mean(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::mean(*this);
}
Tensor Tensor::mean(const Dims& dims, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::mean(*this, dims, keepdim);
}
Tensor Tensor::var(const Dims& dims, int64_t correction, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::var(*this, dims, correction, keepdim);
}
Tensor Tensor::amax(const Dims& dims, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::amax(*this, dims, keepdim);
}
Tensor Tensor::amin(const Dims& dims, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::amin(*this, dims, keepdim);
}
Tensor Tensor::max(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::amax(*this);
}
std::pair<Tensor, Tensor> Tensor::max(int64_t d, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::max(*this, d, keepdim);
}
Tensor Tensor::min(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::amin(*this);
}
std::pair<Tensor, Tensor> Tensor::min(int64_t d, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::min(*this, d, keepdim);
}
Tensor Tensor::argmax(int64_t d, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::argmax(*this, d, keepdim);
}
Tensor Tensor::argmin(int64_t d, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::argmin(*this, d, keepdim);
}

Tensor Tensor::matmul(const Tensor& o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::matmul(*this, o);
}
Tensor Tensor::softmax(int64_t d, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::softmax(*this, d);
}
Tensor Tensor::log_softmax(int64_t d, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::log_softmax(*this, d);
}
Tensor Tensor::masked_fill(const Tensor& mask, double value, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::masked_fill(*this, mask, value);
}
Tensor Tensor::index_select(int64_t d, const Tensor& index, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::index_select(*this, d, index);
}
Tensor Tensor::gather(int64_t d, const Tensor& index, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::gather(*this, d, index);
}
Tensor Tensor::tril(int64_t diagonal, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::tril(*this, diagonal);
}
Tensor Tensor::triu(int64_t diagonal, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::triu(*this, diagonal);
}
std::vector<Tensor> Tensor::split(int64_t size, int64_t d, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::split(*this, size, d);
}
std::vector<Tensor> Tensor::chunk(int64_t n, int64_t d, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::chunk(*this, n, d);
}

// ---- operators ----
// Each names the user's line through its Operand (tensor.h).
Tensor operator+(const Tensor& a, Operand b) { return add(a, b.tensor, 1.0, b.site); }
Tensor operator-(const Tensor& a, Operand b) { return sub(a, b.tensor, 1.0, b.site); }
Tensor operator*(const Tensor& a, Operand b) { return mul(a, b.tensor, b.site); }
Tensor operator/(const Tensor& a, Operand b) { return div(a, b.tensor, b.site); }
Tensor operator+(Operand a, double b) {
  return add(a.tensor, scalar_like(a.tensor, b), 1.0, a.site);
}
Tensor operator-(Operand a, double b) {
  return sub(a.tensor, scalar_like(a.tensor, b), 1.0, a.site);
}
Tensor operator*(Operand a, double b) { return mul(a.tensor, scalar_like(a.tensor, b), a.site); }
Tensor operator/(Operand a, double b) { return div(a.tensor, scalar_like(a.tensor, b), a.site); }
Tensor operator+(double a, Operand b) {
  return add(scalar_like(b.tensor, a), b.tensor, 1.0, b.site);
}
Tensor operator-(double a, Operand b) {
  return sub(scalar_like(b.tensor, a), b.tensor, 1.0, b.site);
}
Tensor operator*(double a, Operand b) { return mul(scalar_like(b.tensor, a), b.tensor, b.site); }
Tensor operator/(double a, Operand b) { return div(scalar_like(b.tensor, a), b.tensor, b.site); }
Tensor operator-(Operand a) { return neg(a.tensor, a.site); }

Tensor operator==(Operand a, Operand b) { return eq(a.tensor, b.tensor, b.site); }
Tensor operator!=(Operand a, Operand b) { return ne(a.tensor, b.tensor, b.site); }
Tensor operator<(const Tensor& a, Operand b) { return lt(a, b.tensor, b.site); }
Tensor operator<=(const Tensor& a, Operand b) { return le(a, b.tensor, b.site); }
Tensor operator>(const Tensor& a, Operand b) { return gt(a, b.tensor, b.site); }
Tensor operator>=(const Tensor& a, Operand b) { return ge(a, b.tensor, b.site); }
Tensor operator==(Operand a, double b) { return eq(a.tensor, scalar_like(a.tensor, b), a.site); }
Tensor operator!=(Operand a, double b) { return ne(a.tensor, scalar_like(a.tensor, b), a.site); }
Tensor operator<(Operand a, double b) { return lt(a.tensor, scalar_like(a.tensor, b), a.site); }
Tensor operator<=(Operand a, double b) { return le(a.tensor, scalar_like(a.tensor, b), a.site); }
Tensor operator>(Operand a, double b) { return gt(a.tensor, scalar_like(a.tensor, b), a.site); }
Tensor operator>=(Operand a, double b) { return ge(a.tensor, scalar_like(a.tensor, b), a.site); }
Tensor operator==(double a, Operand b) { return eq(scalar_like(b.tensor, a), b.tensor, b.site); }
Tensor operator!=(double a, Operand b) { return ne(scalar_like(b.tensor, a), b.tensor, b.site); }
Tensor operator<(double a, Operand b) { return lt(scalar_like(b.tensor, a), b.tensor, b.site); }
Tensor operator<=(double a, Operand b) { return le(scalar_like(b.tensor, a), b.tensor, b.site); }
Tensor operator>(double a, Operand b) { return gt(scalar_like(b.tensor, a), b.tensor, b.site); }
Tensor operator>=(double a, Operand b) { return ge(scalar_like(b.tensor, a), b.tensor, b.site); }

}  // namespace sg
