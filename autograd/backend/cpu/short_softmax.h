// Softmax over rows of at most 16 floats (attention over short sequences) with AVX-512: a row is
// one register, its first D lanes real (masked loads and stores), so max, exp, sum and scale are
// a handful of instructions per row instead of four short loops with vector prologues and scalar
// epilogues each. Used where the CPU has AVX-512 (softmax.cpp falls back to its portable path).
#pragma once

#include <cstdint>

namespace sg::cpu {

// Whether short_softmax_rows can take rows of D elements here: D <= 16 and the CPU has AVX-512.
bool short_softmax_fits(int64_t D);

// y = softmax(x) over each of `rows` contiguous rows of D floats. With a mask, row r's entry d
// takes part when keep[r * keep_row_stride + d * keep_stride] is nonzero (keep_stride 0: one byte
// for the whole row); a row with nothing kept becomes zeros. keep == nullptr: no mask (a row of
// -inf becomes NaN, as in PyTorch). Sums in double, as every softmax here.
void short_softmax_rows(const float* x, float* y, int64_t rows, int64_t D, const uint8_t* keep,
                        int64_t keep_row_stride, int64_t keep_stride);

}  // namespace sg::cpu
