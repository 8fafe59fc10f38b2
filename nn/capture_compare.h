// Comparing two captures of one training step (the first-divergent-op finder,
// scripts/find_divergence.sh): the same model, weights and batch run by two implementations, each
// saving every module's output, every parameter's gradient and the loss under the same names, in
// execution order.
//
//   auto report = sg::nn::compare_captures(load_safetensors("torch.safetensors"),
//                                          load_safetensors("ours.safetensors"), 1e-4, 1e-3);
//   fmt::print("{}", report.str());   // one line per entry; the first divergence named
//
// An entry diverges when some element has |a - b| > atol + rtol·|a| (torch.allclose's rule, with
// `reference` as a), or when its shape differs, or when it is missing from one side. Execution
// order comes from the metadata key "order" (names separated by commas) of the reference; without
// it, the reference file's tensor order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nn/safetensors.h"

namespace sg::nn {

struct CaptureDifference {
  std::string name;
  double max_abs = 0;  // the largest |a - b|
  double max_rel = 0;  // the largest |a - b| / |a| over elements where a != 0
  bool diverges = false;
  std::string problem;  // "" or why it cannot be compared: "missing from the candidate", shapes
};

struct CaptureComparison {
  double atol = 0, rtol = 0;
  std::vector<CaptureDifference> entries;  // execution order
  std::optional<size_t> first_divergent;   // index into entries
  // The table and a verdict: "first divergence: decoder.layers.0.norm1 (max abs 0.031 ...)" or
  // "no divergence beyond atol 1e-05, rtol 0.001 in 42 entries".
  std::string str() const;
};

CaptureComparison compare_captures(const SafetensorsFile& reference,
                                   const SafetensorsFile& candidate, double atol, double rtol);

}  // namespace sg::nn
