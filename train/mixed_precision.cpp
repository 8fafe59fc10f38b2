#include "train/mixed_precision.h"

#include <fmt/format.h>

#include "autograd/cpu_features.h"
#include "autograd/cpu_kernels.h"
#include "autograd/error.h"

namespace sg::train {

std::string bfloat16_speed_note(Device device) {
  if (device.is_cuda()) return "";
  if (cpu_kernels() == CpuKernels::Reference) {
    return "--bf16: the reference CPU kernels round the products' inputs to bfloat16 and run the "
           "float32 product, so this run is slower than float32 (the fast kernels have a "
           "bfloat16 product)";
  }
  if (cpu_features() < CpuFeatures::Avx512Bf16) {
    return fmt::format(
        "--bf16: the CPU kernels may use {} here, not AVX512-BF16, so the bfloat16 products run "
        "on the reference kernel (inputs rounded, float32 product): correct, but slower than "
        "float32",
        cpu_features_name(cpu_features()));
  }
  return "";
}

std::string precision_name(bool bf16) { return bf16 ? "bfloat16 autocast" : "float32"; }

void check_same_precision(const nn::Metadata& saved, bool bf16, const std::string& path) {
  const auto it = saved.find("precision");
  if (it == saved.end()) return;
  SG_CHECK(it->second == precision_name(bf16),
           "--resume: {} was trained in {}, and this run asks for {}: a resumed run keeps its "
           "precision ({} --bf16, or train another run with another --out or --overwrite)",
           path, it->second, precision_name(bf16), bf16 ? "drop" : "add");
}

}  // namespace sg::train
