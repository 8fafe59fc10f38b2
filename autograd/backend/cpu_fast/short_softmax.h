// Softmax over rows of at most 64 floats (attention's keys: 11 in the tiny copy-task model, 64 in
// the medium one) with AVX-512: a row is 1 to 4 registers of 16 floats, the lanes past D masked
// off (masked loads and stores), so max, exp, sum and scale are a few instructions per row
// instead of four short loops with vector prologues and scalar epilogues each. Used where the
// CPU has AVX-512 (softmax.cpp falls back to its portable loops).
#pragma once

#include <cstdint>

namespace sg::cpu {

// Whether the kernels here can take rows of D elements: D <= 64 and the CPU has AVX-512.
bool short_softmax_fits(int64_t D);

// y = softmax(x) over each of `rows` contiguous rows of D floats. With a mask, row r's entry d
// takes part when keep[r * keep_row_stride + d * keep_stride] is nonzero (keep_stride 0: one byte
// for the whole row); a row with nothing kept becomes zeros. keep == nullptr: no mask (a row of
// -inf becomes NaN, as in PyTorch). Sums in double, as every softmax here.
void short_softmax_rows(const float* x, float* y, int64_t rows, int64_t D, const uint8_t* keep,
                        int64_t keep_row_stride, int64_t keep_stride);

// y = log_softmax(x) over each of `rows` contiguous rows of D floats (no mask): (x - max) -
// log(sum).
void short_log_softmax_rows(const float* x, float* y, int64_t rows, int64_t D);

// The backward of softmax (not log_softmax) over rows of D floats: dx = y * (g - sum(g * y)), the
// dot product multiplied and summed in double.
void short_softmax_backward_rows(const float* g, const float* y, float* dx, int64_t rows,
                                 int64_t D);

}  // namespace sg::cpu
