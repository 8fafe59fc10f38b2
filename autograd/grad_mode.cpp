#include "autograd/grad_mode.h"

namespace sg {

namespace {
thread_local bool grad_enabled = true;  // per thread, as in PyTorch
}

bool is_grad_enabled() { return grad_enabled; }
void set_grad_enabled(bool enabled) { grad_enabled = enabled; }

}  // namespace sg
