// The bfloat16 half of bench_matmul (--bf16): matmul_bf16.cpp says what it measures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sg::bench {

struct Bf16Options {
  double ms = 2000.0;  // time per case, all sides together
  int threads = 2;     // our pool's threads and oneDNN's
  bool onednn = true;  // time oneDNN too where this build has it
  std::string only;    // run only the cases whose name contains this
  // The bfloat16 kernel on every case, below autocast's CPU size threshold too (which keeps such
  // products in float32; autograd/autocast.h): what attention's per-head products would cost.
  bool no_threshold = false;
};

struct Bf16Case {
  std::string name, shapes;
  double flops = 0;                                                     // per call
  double f32_best = 0, bf16_best = 0, f32_median = 0, bf16_median = 0;  // GFLOP/s
  double speedup = 0;  // median over rounds of float32 time / bfloat16 time (> 1: bf16 faster)
  double onednn_best = 0, onednn_product_best = 0;  // GFLOP/s, with and without its casts
  double over_onednn =
      0;  // median over rounds of oneDNN's time (with casts) / ours: > 1 ours faster
  double difference_from_onednn = 0;
  int64_t rounds = 0;
};

std::vector<Bf16Case> run_bf16_cases(const Bf16Options& options);
// The size curve behind autocast's threshold (bench_matmul --bf16 --curve), printed.
void run_bf16_curve(const Bf16Options& options);
std::string bf16_cases_json(const std::vector<Bf16Case>& cases);

}  // namespace sg::bench
