// Deterministic mode (PyTorch's torch.use_deterministic_algorithms): with it on, every kernel
// that would add in an order that varies from run to run adds in a fixed order instead, so two
// runs of the same program on the same machine, and a CUDA graph's replay against the eager
// step, give the same bits.
//
// Off by default, because the fixed order costs time. On the GPU the kernels that differ are
// index_add and scatter_add (the embedding's backward, gather's and max's backward): by default
// they add with atomicAdd, each position as its thread gets there; deterministic, they sort the
// positions by their target and add each target's values in position order (the CPU's order, so
// the GPU then gives the CPU's bits for them). Every other kernel of the library already sums in a
// fixed order (fixed chunks, fixed trees, cuBLAS with its fixed workspace), and the CPU backends
// are deterministic for a given thread count: no op has to refuse the mode (PyTorch refuses the
// ops it has no deterministic version of).
//   sg::use_deterministic_algorithms(true);
//   { sg::DeterministicAlgorithmsGuard on(true); ... }   // in a scope
#pragma once

namespace sg {

void use_deterministic_algorithms(bool enabled);
bool are_deterministic_algorithms_enabled();

class DeterministicAlgorithmsGuard {
 public:
  explicit DeterministicAlgorithmsGuard(bool enabled)
      : previous_(are_deterministic_algorithms_enabled()) {
    use_deterministic_algorithms(enabled);
  }
  ~DeterministicAlgorithmsGuard() { use_deterministic_algorithms(previous_); }
  DeterministicAlgorithmsGuard(const DeterministicAlgorithmsGuard&) = delete;
  DeterministicAlgorithmsGuard& operator=(const DeterministicAlgorithmsGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace sg
