// Tests for nn/container.cpp: Sequential chains its layers in order, ModuleList holds and indexes
// modules; both name their elements "0", "1", ... in parameter names and printouts.
#include "nn/container.h"

#include "nn/activation.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::tensors_near;

std::vector<std::string> names_of(const NamedTensors& named) {
  std::vector<std::string> out;
  for (const auto& [name, _] : named) out.push_back(name);
  return out;
}

TEST(SequentialTest, ChainsLayersInOrder) {
  auto fc1 = std::make_shared<Linear>(4, 8);
  auto fc2 = std::make_shared<Linear>(8, 2);
  Sequential mlp;
  mlp.push_back(fc1);
  mlp.push_back(std::make_shared<ReLU>());
  mlp.push_back(fc2);
  Tensor x = randn({5, 4});
  Tensor expected = fc2->forward(relu(fc1->forward(x)));
  EXPECT_TRUE(tensors_near(mlp(x), expected, 0, 0));
  EXPECT_EQ(mlp.size(), 3u);
  EXPECT_EQ(mlp[2], fc2);
  EXPECT_EQ(names_of(mlp.named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(mlp.num_parameters(), 4 * 8 + 8 + 8 * 2 + 2);
}

TEST(SequentialTest, EmptyIsIdentityAndIndexErrors) {
  Sequential empty;
  Tensor x = randn({2});
  EXPECT_TRUE(empty(x).is_same(x));
  EXPECT_SG_ERROR(empty[0], "Sequential: index 0 is out of range for 0 layers");
}

TEST(SequentialTest, PrintsLikePyTorch) {
  Sequential mlp;
  mlp.push_back(std::make_shared<Linear>(4, 8));
  mlp.push_back(std::make_shared<GELU>("tanh"));
  EXPECT_EQ(mlp.str(),
            "Sequential(\n"
            "  (0): Linear(in_features=4, out_features=8, bias=true)\n"
            "  (1): GELU(approximate='tanh')\n"
            ")");
}

TEST(ModuleListTest, HoldsIndexesAndIterates) {
  ModuleList layers;
  layers.push_back(std::make_shared<Linear>(3, 3));
  layers.push_back(std::make_shared<LayerNorm>(Shape{3}));
  EXPECT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers.at<Linear>(0)->in_features, 3);
  EXPECT_EQ(layers.at<LayerNorm>(1)->normalized_shape, (Shape{3}));
  EXPECT_EQ(layers.at(1)->type_name(), "LayerNorm");
  int count = 0;
  for (const auto& m : layers) count += m->type_name().empty() ? 0 : 1;
  EXPECT_EQ(count, 2);
  EXPECT_EQ(names_of(layers.named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"}));
}

TEST(ModuleListTest, WrongTypeAndIndexAreErrors) {
  ModuleList layers;
  layers.push_back(std::make_shared<Linear>(3, 3));
  EXPECT_SG_ERROR(layers.at<LayerNorm>(0),
                  "ModuleList: element 0 is a Linear, not the type asked for");
  EXPECT_SG_ERROR(layers.at(1), "ModuleList: index 1 is out of range for 1 modules");
}

TEST(ModuleListTest, NestedNamesReadLikeTorch) {
  // encoder.layers.1.weight: the names a checkpoint written by PyTorch would use.
  class Encoder : public Module {
   public:
    Encoder() : Module("Encoder") {
      layers = register_module("layers", std::make_shared<ModuleList>());
      layers->push_back(std::make_shared<Linear>(2, 2, false));
      layers->push_back(std::make_shared<Linear>(2, 2, false));
    }
    std::shared_ptr<ModuleList> layers;
  };
  Encoder enc;
  EXPECT_EQ(names_of(enc.named_parameters()),
            (std::vector<std::string>{"layers.0.weight", "layers.1.weight"}));
  EXPECT_EQ(enc.str(),
            "Encoder(\n"
            "  (layers): ModuleList(\n"
            "    (0): Linear(in_features=2, out_features=2, bias=false)\n"
            "    (1): Linear(in_features=2, out_features=2, bias=false)\n"
            "  )\n"
            ")");
}

}  // namespace
}  // namespace sg::nn
