// Autocast: mixed precision for a scope, PyTorch's torch.autocast(dtype=torch.bfloat16).
//
//   {
//     sg::AutocastGuard autocast(sg::kBFloat16);         // around the forward and the loss
//     loss = sg::cross_entropy(model(src, tgt), target);
//   }
//   loss.backward();                                     // outside: as recorded inside
//   optimizer.step();                                    // float32, as always
//
// Inside it, the matrix products -- matmul, fused_linear and linear_composed (nn::Linear), and the
// two products of attention (fused_attention, attention_composed) -- read their float32 operands
// rounded to bfloat16 and sum the exact products in float32; their results are float32. On the
// CPU, a product smaller than kAutocastCpuMinProduct multiply-adds stays float32: there, rounding
// its operands costs more than the bfloat16 kernel saves (measured below). Nothing
// else changes: softmax, log-softmax, layer norm, cross-entropy, reductions and the optimizer stay
// float32, the parameters and Adam's moments stay float32 (the master weights), and gradients come
// back float32. float64 tensors are never rounded (gradcheck stays exact), and bfloat16 tensors
// are still refused by the products (autograd/dtype.h).
//
// An op recorded under autocast remembers it: its backward products read bfloat16-rounded operands
// too, whether or not backward runs inside the guard (it usually runs outside). The state is per
// thread, as grad mode is. docs/13b-mixed-precision.md is the chapter.
#pragma once

#include <cstdint>

#include "autograd/device.h"
#include "autograd/dtype.h"

namespace sg {

// Whether this thread's products run in bfloat16 (torch.is_autocast_enabled).
bool is_autocast_enabled();
// The dtype of autocast's products: bfloat16, the only one scratchgrad has (torch's CPU default).
DType autocast_dtype();

// Autocast for a scope, then the previous state. `enabled` false turns it off inside an enabled
// scope (a region that must stay float32), as torch.autocast(enabled=False). Throws for a dtype
// other than bfloat16.
class AutocastGuard {
 public:
  explicit AutocastGuard(DType dtype, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool saved_;
};

// The CPU's size threshold, in multiply-adds of one matrix product (M·N·K; each product of a batch
// alone). `bench_matmul --bf16 --curve` times the backend's float32 and bfloat16 products by size:
// on a 2-core AMD EPYC with AVX512-BF16 (Zen 4), bfloat16 was slower than float32 for every Linear
// product of width 32 or less (0.4-0.7x at [800, 32]·[32, 32], the tiny model's), mixed around
// 3-8 million (0.77x at [800, 64]·[64, 64], 1.38x at [2048, 64]·[64, 64], 0.49x at a decoding
// step's [10, 512]·[512, 512], where packing the weight dominates) and 1.7-2x faster from 13
// million up; the per-head products of short attention (64 x [10, 64]·[64, 10]) 0.2-0.7x. At 2^23
// (8.4 million) the tiny model and decoding run every product in float32, the larger models each
// Linear layer in bfloat16 (docs/13b-mixed-precision.md has the table). The GPU has no threshold
// (every product in bfloat16, as torch.autocast): its curve is not measured.
inline constexpr int64_t kAutocastCpuMinProduct = int64_t{1} << 23;

// This thread's CPU threshold: kAutocastCpuMinProduct unless a guard below changed it.
int64_t autocast_cpu_min_product();

// Another CPU threshold for a scope, then the previous one: 0 runs every product in bfloat16, as
// torch.autocast does (the tests of small products use it).
class AutocastCpuMinProductGuard {
 public:
  explicit AutocastCpuMinProductGuard(int64_t min_product);
  ~AutocastCpuMinProductGuard();
  AutocastCpuMinProductGuard(const AutocastCpuMinProductGuard&) = delete;
  AutocastCpuMinProductGuard& operator=(const AutocastCpuMinProductGuard&) = delete;

 private:
  int64_t saved_;
};

// Whether a product of `dtype` operands on `device`, of `work` multiply-adds (M·N·K of one matrix
// product), runs in bfloat16 now: autocast is on, the operands are float32 (float64 is never
// rounded) and, on the CPU, the product is at least the threshold. The ops record the answer with
// the product, for backward.
bool autocast_applies(DType dtype, Device device, double work);

// A recorded product's backward runs under this: its products in bfloat16 whatever their size if
// the forward's were (`bfloat16`), in float32 otherwise. The backward's products have the
// forward's sizes (or sums of them), and must round as the forward did.
class AutocastAsRecorded {
 public:
  explicit AutocastAsRecorded(bool bfloat16)
      : autocast_(kBFloat16, bfloat16), every_size_(bfloat16 ? 0 : autocast_cpu_min_product()) {}

 private:
  AutocastGuard autocast_;
  AutocastCpuMinProductGuard every_size_;
};

}  // namespace sg
