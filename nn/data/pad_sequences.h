// Sequences of token ids of different lengths as one batch: each row padded with `pad` to the
// longest, [B, longest] int64 (PyTorch's pad_sequence(batch_first=True, padding_value=pad)).
//
//   sg::data::pad_sequences({{5, 6, 7}, {8}}, 0)   ->   [[5, 6, 7], [8, 0, 0]]
//
// What every batch of text is made with: the bucketing loader's sources and targets, the sources
// generate_in_batches decodes, a language model's words.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/tensor.h"

namespace sg::data {

// An error for no rows or a pad id below 0; empty rows are all padding.
Tensor pad_sequences(const std::vector<std::vector<int64_t>>& rows, int64_t pad);

}  // namespace sg::data
