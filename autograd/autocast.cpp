#include "autograd/autocast.h"

namespace sg {

namespace {
thread_local bool autocast_enabled = false;  // per thread, as in PyTorch
}

bool is_autocast_enabled() { return autocast_enabled; }
DType autocast_dtype() { return kBFloat16; }

AutocastGuard::AutocastGuard(DType dtype, bool enabled) : saved_(autocast_enabled) {
  SG_CHECK(dtype == kBFloat16,
           "AutocastGuard: scratchgrad's autocast runs products in bfloat16 only, got {}", dtype);
  autocast_enabled = enabled;
}

AutocastGuard::~AutocastGuard() { autocast_enabled = saved_; }

bool autocast_applies(DType dtype) { return autocast_enabled && dtype == kFloat32; }

}  // namespace sg
