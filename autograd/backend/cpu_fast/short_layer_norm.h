// Layer normalisation over rows of at most 64 floats (the tiny copy-task model's d_model is 32)
// with AVX-512: a row is 1 to 4 registers, so its mean, variance and the two sums of the backward
// are a few instructions each instead of short loops with vector prologues and scalar epilogues,
// and the backward keeps the weight and bias gradients in registers across all its rows. Used
// where the CPU has AVX-512 (layer_norm.cpp keeps its portable loops for the rest). The formulas
// and the double sums are layer_norm.cpp's.
#pragma once

#include <cstdint>

namespace sg::cpu {

// Whether the kernels here can take rows of D elements: D <= 64 and the CPU has AVX-512.
bool short_layer_norm_fits(int64_t D);

// Forward over `rows` contiguous rows of D floats: y = (x - mean) * rstd * w + b, with mean and
// rstd written per row. w and b may be null (no affine weight or bias).
void short_layer_norm_rows(const float* x, const float* w, const float* b, double eps, float* y,
                           float* mean, float* rstd, int64_t rows, int64_t D);

// Backward over `rows` rows: dx (may be null) as in layer_norm.cpp; the rows' share of dw and db
// ADDED to dw_sums and db_sums (D doubles each; null when not wanted).
void short_layer_norm_backward_rows(const float* g, const float* x, const float* mean,
                                    const float* rstd, const float* w, float* dx, int64_t rows,
                                    int64_t D, double* dw_sums, double* db_sums);

}  // namespace sg::cpu
