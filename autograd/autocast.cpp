#include "autograd/autocast.h"

namespace sg {

namespace {
thread_local bool autocast_enabled = false;  // per thread, as in PyTorch
thread_local int64_t cpu_min_product = kAutocastCpuMinProduct;
}  // namespace

bool is_autocast_enabled() { return autocast_enabled; }
DType autocast_dtype() { return kBFloat16; }

AutocastGuard::AutocastGuard(DType dtype, bool enabled) : saved_(autocast_enabled) {
  SG_CHECK(dtype == kBFloat16,
           "AutocastGuard: scratchgrad's autocast runs products in bfloat16 only, got {}", dtype);
  autocast_enabled = enabled;
}

AutocastGuard::~AutocastGuard() { autocast_enabled = saved_; }

int64_t autocast_cpu_min_product() { return cpu_min_product; }

AutocastCpuMinProductGuard::AutocastCpuMinProductGuard(int64_t min_product)
    : saved_(cpu_min_product) {
  SG_CHECK(min_product >= 0,
           "AutocastCpuMinProductGuard: the threshold counts multiply-adds, got {}", min_product);
  cpu_min_product = min_product;
}

AutocastCpuMinProductGuard::~AutocastCpuMinProductGuard() { cpu_min_product = saved_; }

bool autocast_applies(DType dtype, Device device, double work) {
  if (!autocast_enabled || dtype != kFloat32) return false;
  return !device.is_cpu() || work >= static_cast<double>(cpu_min_product);
}

}  // namespace sg
