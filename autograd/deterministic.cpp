#include "autograd/deterministic.h"

#include <atomic>

namespace sg {

namespace {
// Process-wide, as PyTorch's: a setting of the program, not of one thread.
std::atomic<bool> deterministic{false};
}  // namespace

void use_deterministic_algorithms(bool enabled) { deterministic.store(enabled); }

bool are_deterministic_algorithms_enabled() { return deterministic.load(); }

}  // namespace sg
