// The keys or the values of the positions decoded so far, [B, H, L, D], to which every step of
// incremental decoding appends its new positions (nn/transformer_decoder.h):
//   sg::nn::KVBuffer keys(sg::nn::KVBuffer::Layout::Columns);
//   keys.append(k);            // k [B, H, n, D]: the same as keys = cat({keys, k}, 2)
//   attend(q, keys.tensor());  // [B, H, L, D]
//
// append is cat along the positions, but cat would copy all L positions again at every step
// (O(L²) copying over a sequence) and allocate a new tensor each time. So, as std::vector does,
// the positions live in a buffer with room for more (the capacity doubles when it is full): a
// step writes only its own positions, in place, and tensor() is a view of the filled ones. Where
// autograd records (grad mode on and x requires grad), append is that cat, so gradients flow as
// through any op; copies of a KVBuffer share its buffer, and one that is no longer the newest
// copies its positions out before appending, so a copy never sees another's positions.
//
// Layout::Columns keeps the buffer as [B, H, D, capacity]: tensor() is then [B, H, L, D] with
// each head dim's L positions contiguous, the layout in which the attention kernels read one
// query's scores as a few vector loads (backend/cpu_fast/short_attention.cpp); Layout::Rows
// keeps [B, H, capacity, D], each position's D numbers contiguous, as P·v reads the values.
#pragma once

#include <cstdint>
#include <memory>

#include "autograd/tensor.h"

namespace sg::nn {

class KVBuffer {
 public:
  enum class Layout { Rows, Columns };
  explicit KVBuffer(Layout layout = Layout::Rows) : layout_(layout) {}

  // x [B, H, n, D] becomes positions length() .. length() + n - 1.
  void append(const Tensor& x);
  // The positions so far, [B, H, L, D] (undefined before the first append).
  const Tensor& tensor() const { return filled_; }
  int64_t length() const { return filled_.defined() ? filled_.size(2) : 0; }
  // Row i of the batch becomes the old row index[i] (beam search's reordering): tensor() becomes
  // tensor().index_select(0, index), in the same layout.
  void reorder(const Tensor& index);

 private:
  // [B, H, capacity, D] or [B, H, D, capacity] viewed as [B, H, capacity, D].
  Tensor positions(const Tensor& buffer) const;
  // A new buffer for at least `length` positions, holding the current ones.
  void grow(int64_t length);

  Layout layout_;
  Tensor buffer_;                  // as allocated: [B, H, capacity, D] or [B, H, D, capacity]
  Tensor filled_;                  // the view of its first L positions, [B, H, L, D]
  std::shared_ptr<int64_t> used_;  // positions of buffer_ written, by this KVBuffer or a copy
};

}  // namespace sg::nn
