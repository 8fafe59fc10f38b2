// bfloat16 in the nn layer: the functional ops and modules refuse bfloat16 tensors by name (Note
// [bfloat16 is for storage] in autograd/dtype.h), Module::to(kBFloat16) says what to do instead,
// and bfloat16 tensors round-trip through safetensors checkpoints.
#include <functional>
#include <string>
#include <vector>

#include "nn/nn.h"
#include "nn/safetensors.h"
#include "tests/nn/serialize_testing.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

TEST(BFloat16NnTest, FunctionalOpsAndModulesRefuseBFloat16ByName) {
  manual_seed(3);
  const Tensor x = randn({2, 3, 4}).to(kBFloat16);
  const Tensor ids = zeros({2, 3}, kInt64);
  Linear linear_layer(4, 5);
  LayerNorm norm({4});
  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"linear", [&] { (void)linear(x, x.select(0, 0).select(0, 0).unsqueeze(0)); }},
      {"layer_norm", [&] { (void)layer_norm(x, {4}, Tensor(), Tensor()); }},
      {"scaled_dot_product_attention", [&] { (void)scaled_dot_product_attention(x, x, x); }},
      {"mse_loss", [&] { (void)mse_loss(x, x); }},
      {"nll_loss", [&] { (void)nll_loss(x, ids); }},
      {"cross_entropy_composed", [&] { (void)cross_entropy_composed(x, ids); }},
      {"cross_entropy", [&] { (void)cross_entropy(x, ids); }},
      {"fused_linear", [&] { (void)linear_layer(x); }},
      {"fused_layer_norm", [&] { (void)norm(x); }},
      {"Linear.to", [&] { linear_layer.to(kBFloat16); }},
  };
  for (const auto& [name, run] : cases) {
    SCOPED_TRACE(name);
    try {
      run();
      ADD_FAILURE() << name << " accepted a bfloat16 tensor";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind(name + ":", 0), 0u) << "message was: " << message;
      EXPECT_NE(message.find("bfloat16"), std::string::npos) << "message was: " << message;
    }
  }
  // Module::to(kBFloat16) changed nothing: the parameters are still float32.
  EXPECT_EQ(linear_layer.weight.dtype(), kFloat32);
  EXPECT_SG_ERROR(linear_layer.to(kBFloat16), "sg::AutocastGuard(sg::kBFloat16)");
}

TEST(BFloat16NnTest, CheckpointsKeepTheBits) {
  testing::TempDir dir;
  manual_seed(5);
  const Tensor w = randn({3, 7}).to(kBFloat16);
  const Tensor strided = randn({4, 6}).to(kBFloat16).t();  // saved contiguous
  save_safetensors(dir / "h.safetensors", {{"w", w}, {"t", strided}});
  const SafetensorsFile file = load_safetensors(dir / "h.safetensors");
  EXPECT_TRUE(testing::bit_identical(file.tensors, {{"w", w}, {"t", strided}}));
  // 2 bytes per value: 21 + 24 values after the header.
  const std::string bytes = testing::read_bytes(dir / "h.safetensors");
  EXPECT_NE(bytes.find("\"dtype\":\"BF16\""), std::string::npos);
  EXPECT_EQ(file.tensors[0].second.dtype(), kBFloat16);
}

}  // namespace
}  // namespace sg::nn
