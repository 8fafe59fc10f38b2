// The copy task's tiny Transformer and its padded batches, for the tests that train it step by
// step on a device (tests/nn/test_cuda_training.cpp, tests/nn/test_cuda_graph.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/autograd.h"
#include "nn/transformer_options.h"

namespace sg::testing {

inline constexpr int64_t kCopyVocab = 11, kCopyPad = 0, kCopyStart = 1;

// d_model 32, 4 heads, 2 + 2 layers, ffn 64: examples/copy_task's tiny preset.
inline nn::TransformerOptions tiny_copy_task_options(double dropout) {
  nn::TransformerOptions o;
  o.src_vocab = o.tgt_vocab = kCopyVocab;
  o.d_model = 32;
  o.heads = 4;
  o.num_encoder_layers = o.num_decoder_layers = 2;
  o.d_ff = 64;
  o.max_len = 16;
  o.dropout = dropout;
  o.pad_idx = kCopyPad;
  return o;
}

// int64 [batch, length] on the CPU: each row the start symbol, then 5..length-1 symbols from
// 2..10, then padding. The same sequences for the same seed.
inline Tensor copy_task_sequences(uint64_t seed, int64_t batch = 8, int64_t length = 10) {
  Generator gen(seed);
  std::vector<int64_t> seq(static_cast<size_t>(batch * length), kCopyPad);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t n = 6 + static_cast<int64_t>(gen.next_u64() % (length - 5));
    seq[static_cast<size_t>(b * length)] = kCopyStart;
    for (int64_t t = 1; t < n; ++t) {
      seq[static_cast<size_t>(b * length + t)] = 2 + static_cast<int64_t>(gen.next_u64() % 9);
    }
  }
  return from_vector(seq, {batch, length});
}

}  // namespace sg::testing
