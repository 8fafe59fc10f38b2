#include "nn/kv_buffer.h"

#include <algorithm>

#include "autograd/error.h"
#include "autograd/factory.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"

namespace sg::nn {

namespace {

constexpr int64_t kMinCapacity = 16;  // positions; a tiny model's whole sequence

}  // namespace

Tensor KVBuffer::positions(const Tensor& buffer) const {
  return layout_ == Layout::Columns ? buffer.transpose(2, 3) : buffer;
}

void KVBuffer::grow(int64_t length) {
  const int64_t capacity = std::max(kMinCapacity, 2 * length);
  const int64_t B = filled_.size(0), H = filled_.size(1), D = filled_.size(3);
  Tensor bigger = layout_ == Layout::Columns ? empty({B, H, D, capacity}, filled_.options())
                                             : empty({B, H, capacity, D}, filled_.options());
  const int64_t L = filled_.size(2);
  if (L > 0) positions(bigger).narrow(2, 0, L).copy_(filled_);
  buffer_ = bigger;
  filled_ = positions(buffer_).narrow(2, 0, L);
  used_ = std::make_shared<int64_t>(L);
}

void KVBuffer::append(const Tensor& x) {
  SG_CHECK(x.defined() && x.dim() == 4, "KVBuffer::append: expected [B, H, n, D], got {}",
           x.defined() ? x.shape() : Shape{});
  if (filled_.defined()) {
    SG_CHECK(x.size(0) == filled_.size(0) && x.size(1) == filled_.size(1) &&
                 x.size(3) == filled_.size(3) && x.dtype() == filled_.dtype() &&
                 x.device() == filled_.device(),
             "KVBuffer::append: positions of shape {} ({}) do not extend the {} held ({})",
             x.shape(), x.dtype(), filled_.shape(), filled_.dtype());
  }
  if (is_grad_enabled() && (x.requires_grad() || (filled_.defined() && filled_.requires_grad()))) {
    // Recorded for autograd: the plain concatenation (an in-place write would refuse).
    filled_ = filled_.defined() ? cat({filled_, x}, 2) : x;
    buffer_ = Tensor();
    used_ = nullptr;
    return;
  }
  if (!filled_.defined()) filled_ = x.narrow(2, 0, 0);  // no positions yet, x's kind
  const int64_t L = length(), n = x.size(2);
  // In place only where this is the newest copy (no other has written past L) and there is room.
  if (!buffer_.defined() || *used_ != L || L + n > positions(buffer_).size(2)) grow(L + n);
  positions(buffer_).narrow(2, L, n).copy_(x);
  *used_ = L + n;
  filled_ = positions(buffer_).narrow(2, 0, L + n);
}

void KVBuffer::reorder(const Tensor& index) {
  if (!filled_.defined()) return;
  Tensor rows = filled_.index_select(0, index);
  filled_ = Tensor();
  buffer_ = Tensor();
  used_ = nullptr;
  append(rows);
}

}  // namespace sg::nn
