// The elementwise ops as one table that the test suites iterate, PyTorch's OpInfo idea: the
// values against PyTorch's (tests/golden), float64 gradcheck on plain and transposed inputs,
// gradgradcheck, and the GPU kernels against the CPU's. A new elementwise op is one entry here
// and its golden values (scripts/golden/<family>.py); docs/conventions.md lists the rest.
//
//   for (const OpInfo& op : elementwise_ops()) {
//     SCOPED_TRACE(op.name);
//     EXPECT_GRADCHECK(op.fn, op.sample_inputs(kFloat64, 3));
//   }
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autograd/autograd.h"

namespace sg::testing {

// Where an input's values are drawn from.
enum class Domain {
  kAny,            // standard normal
  kPositive,       // |N(0, 1)| + 0.5: log, sqrt, a divisor, a power's base
  kAwayFromKinks,  // N(0, 1) moved 0.05 away from 0: abs, relu, clamp have kinks there or near
};

struct OpInfo {
  std::string name;                        // the golden case, and the name in failure messages
  std::string golden_file;                 // tests/golden/<golden_file>.json
  std::vector<std::string> golden_inputs;  // the case's input names, in the op's order
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  std::vector<Shape> shapes;         // of the sampled inputs (broadcast against each other)
  std::vector<Domain> domains;       // one per input
  bool integers = false;             // also defined on int64 (the GPU is checked there too)
  bool twice_differentiable = true;  // gradgradcheck applies

  // Inputs for the op: leaves that require grad when `dtype` is floating, drawn from the domains
  // with a fixed seed.
  std::vector<Tensor> sample_inputs(DType dtype, uint64_t seed) const;
};

// Every elementwise op, unary and binary.
const std::vector<OpInfo>& elementwise_ops();

}  // namespace sg::testing
