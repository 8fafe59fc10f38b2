// What the CPU's two attention kernels share (short_attention.cpp, gemm_attention.cpp): how they
// address one head of a [B, H, rows, cols] operand, one head's sizes, and which tensors they take.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "autograd/tensor.h"

namespace sg::cpu {

// A [B, H, rows, cols] float tensor: matrix (b, h) starts at data + b * batch + h * head, its
// rows `row` apart and its columns `col` apart. Any strides: a head split from the [B, L, H·D]
// rows of a projection is read where it is. The kernels want col = 1 (rows contiguous), except
// for keys, which may also come by columns (row = 1: a decoding cache's, nn/kv_buffer.h).
struct Heads {
  float* data;
  int64_t batch, head, row, col;
  explicit Heads(const Tensor& t)
      : data(const_cast<float*>(t.data_ptr<float>())),
        batch(t.stride(0)),
        head(t.stride(1)),
        row(t.stride(2)),
        col(t.size(3) == 1 ? 1 : t.stride(3)) {}
  float* at(int64_t b, int64_t h) const { return data + b * batch + h * head; }
};

// One head's sizes: T queries, S keys, head dims Dh (q and k) and Dv (v).
struct HeadSizes {
  int64_t T, S, Dh, Dv;
  static HeadSizes of(const Tensor& q, const Tensor& k, const Tensor& v) {
    return {q.size(2), k.size(2), q.size(3), v.size(3)};
  }
};

// A bool mask [B, H, T, S] (any strides, 0 where broadcast) read as bytes, or none: head (b, h)'s
// starts at at(b, h) (nullptr without a mask), its rows `row` apart and its keys `col` apart.
struct HeadMasks {
  const uint8_t* data = nullptr;
  int64_t batch = 0, head = 0, row = 0, col = 0;
  explicit HeadMasks(const Tensor& mask) {
    if (!mask.defined()) return;
    data = reinterpret_cast<const uint8_t*>(mask.data_ptr<bool>());
    batch = mask.stride(0), head = mask.stride(1), row = mask.stride(2), col = mask.stride(3);
  }
  const uint8_t* at(int64_t b, int64_t h) const {
    return data != nullptr ? data + b * batch + h * head : nullptr;
  }
};

// Whether every tensor is a 4-d float tensor whose last dim is contiguous (or of size 1): rows
// the kernels read with vector loads.
inline bool float_heads(std::initializer_list<const Tensor*> heads) {
  for (const Tensor* t : heads) {
    if (t->dtype() != kFloat32 || t->dim() != 4 || (t->stride(3) != 1 && t->size(3) > 1)) {
      return false;
    }
  }
  return true;
}

// Whether keys [B, H, S, Dh] are in rows (float_heads) or in columns: each head dim's S keys
// contiguous (stride(2) == 1), as a decoding cache keeps them so that one query's scores are a
// few vector loads.
inline bool keys_by_columns(const Tensor& k) {
  return k.dtype() == kFloat32 && k.dim() == 4 && (k.stride(2) == 1 || k.size(2) == 1) &&
         k.stride(3) != 1 && k.size(3) > 1;
}
inline bool float_keys(const Tensor& k) { return float_heads({&k}) || keys_by_columns(k); }

}  // namespace sg::cpu
