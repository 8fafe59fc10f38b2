// Tests for nn/module.cpp: registration, dotted names for nested modules, traversal order,
// state_dict with buffers, train/eval recursion, zero_grad, conversion keeping member handles
// valid, printing, and name errors.
#include "nn/module.h"

#include "nn/container.h"
#include "nn/embedding.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/optim/sgd.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::tensors_near;

// A small tree: Net { emb, layers: [Block { fc, norm, buffer scale }, Block], head }.
class Block : public Module {
 public:
  Block() : Module("Block") {
    fc = register_module("fc", std::make_shared<Linear>(4, 4));
    norm = register_module("norm", std::make_shared<LayerNorm>(Shape{4}));
    scale = register_buffer("scale", full({1}, 0.5));
  }
  std::shared_ptr<Linear> fc;
  std::shared_ptr<LayerNorm> norm;
  Tensor scale;
};

class Net : public Module {
 public:
  Net() : Module("Net") {
    temperature = register_parameter("temperature", ones({}));
    emb = register_module("emb", std::make_shared<Embedding>(10, 4));
    layers = register_module("layers", std::make_shared<ModuleList>());
    layers->push_back(std::make_shared<Block>());
    layers->push_back(std::make_shared<Block>());
    head = register_module("head", std::make_shared<Linear>(4, 10, false));
  }
  Tensor temperature;
  std::shared_ptr<Embedding> emb;
  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<Linear> head;
};

std::vector<std::string> names_of(const NamedTensors& named) {
  std::vector<std::string> out;
  for (const auto& [name, _] : named) out.push_back(name);
  return out;
}

TEST(ModuleTree, NamedParametersUseDottedNamesOwnEntriesFirst) {
  Net net;
  const std::vector<std::string> expected = {
      "temperature",          "emb.weight",         "layers.0.fc.weight", "layers.0.fc.bias",
      "layers.0.norm.weight", "layers.0.norm.bias", "layers.1.fc.weight", "layers.1.fc.bias",
      "layers.1.norm.weight", "layers.1.norm.bias", "head.weight"};
  EXPECT_EQ(names_of(net.named_parameters()), expected);
  EXPECT_EQ(net.parameters().size(), expected.size());
  // The entries are the members themselves, not copies.
  EXPECT_TRUE(net.named_parameters()[6].second.is_same(net.layers->at<Block>(1)->fc->weight));
  EXPECT_EQ(names_of(net.named_parameters(/*recurse=*/false)),
            (std::vector<std::string>{"temperature"}));
  EXPECT_EQ(net.num_parameters(), 1 + 10 * 4 + 2 * (16 + 4 + 4 + 4) + 40);
}

TEST(ModuleTree, StateDictAddsBuffersNamedModulesAndChildren) {
  Net net;
  NamedTensors state = net.state_dict();
  EXPECT_EQ(state.size(), net.parameters().size() + 2);
  EXPECT_EQ(names_of(net.named_buffers()),
            (std::vector<std::string>{"layers.0.scale", "layers.1.scale"}));
  bool found = false;
  for (const auto& [name, t] : state) {
    if (name == "layers.1.scale") found = t.is_same(net.layers->at<Block>(1)->scale);
  }
  EXPECT_TRUE(found);
  EXPECT_FALSE(net.layers->at<Block>(0)->scale.requires_grad());  // buffers are not trained
  std::vector<std::string> modules;
  for (const auto& [name, _] : net.named_modules()) modules.push_back(name);
  EXPECT_EQ(modules, (std::vector<std::string>{"", "emb", "layers", "head", "layers.0", "layers.1",
                                               "layers.0.fc", "layers.0.norm", "layers.1.fc",
                                               "layers.1.norm"}));
  EXPECT_EQ(net.children().size(), 3u);
}

TEST(ModuleTree, TrainAndEvalReachEveryModule) {
  Net net;
  net.eval();
  for (const auto& [name, m] : net.named_modules()) EXPECT_FALSE(m->is_training()) << name;
  net.layers->train();  // a subtree only
  EXPECT_FALSE(net.is_training());
  EXPECT_TRUE(net.layers->at<Block>(1)->norm->is_training());
  EXPECT_FALSE(net.head->is_training());
  net.train();
  for (const auto& [name, m] : net.named_modules()) EXPECT_TRUE(m->is_training()) << name;
}

TEST(ModuleTree, ZeroGradClearsEveryGradient) {
  Net net;
  Tensor ids = from_vector<int64_t>({1, 2, 3}, {3});
  Tensor h = net.emb->forward(ids);
  for (const auto& block : *net.layers) {
    auto b = std::dynamic_pointer_cast<Block>(block);
    h = b->norm->forward(b->fc->forward(h)) * b->scale;
  }
  (net.head->forward(h).sum() * net.temperature).backward();
  for (const auto& [name, p] : net.named_parameters()) EXPECT_TRUE(p.grad().defined()) << name;
  net.zero_grad();
  for (const auto& [name, p] : net.named_parameters()) EXPECT_FALSE(p.grad().defined()) << name;
}

TEST(ModuleTree, ToFloat64KeepsMemberHandlesValid) {
  Net net;
  Tensor w = net.head->weight;  // a handle taken before the conversion
  const std::vector<float> before = w.to_vector<float>();
  net.to(kFloat64);
  EXPECT_EQ(w.dtype(), kFloat64);
  EXPECT_TRUE(w.is_same(net.head->weight));
  EXPECT_TRUE(w.is_same(net.named_parameters().back().second));
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(net.layers->at<Block>(0)->scale.dtype(), kFloat64);  // buffers too
  const std::vector<double> after = w.to_vector<double>();
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i], static_cast<double>(before[i]));
  // And the model computes in float64 end to end.
  EXPECT_EQ(net.head->forward(ones({4}, kFloat64)).dtype(), kFloat64);
  EXPECT_SG_ERROR(net.to(kInt64), "Net.to: modules hold float parameters; got int64");
}

TEST(ModuleTree, PrintsTheTreeLikePyTorch) {
  Net net;
  EXPECT_EQ(net.str(),
            "Net(\n"
            "  (emb): Embedding(10, 4)\n"
            "  (layers): ModuleList(\n"
            "    (0): Block(\n"
            "      (fc): Linear(in_features=4, out_features=4, bias=true)\n"
            "      (norm): LayerNorm([4], eps=1e-05, elementwise_affine=true)\n"
            "    )\n"
            "    (1): Block(\n"
            "      (fc): Linear(in_features=4, out_features=4, bias=true)\n"
            "      (norm): LayerNorm([4], eps=1e-05, elementwise_affine=true)\n"
            "    )\n"
            "  )\n"
            "  (head): Linear(in_features=4, out_features=10, bias=false)\n"
            ")");
  // fmt prints a Module (module.h's formatter is for the base class: cast a derived one).
  EXPECT_EQ(fmt::format("{}", static_cast<const Module&>(*net.head)),
            "Linear(in_features=4, out_features=10, bias=false)");
}

TEST(ModuleRegistration, RejectsBadAndDuplicateNames) {
  Module m("Custom");
  m.register_parameter("w", ones({2}));
  EXPECT_SG_ERROR(m.register_parameter("w", ones({2})),
                  "Custom: the name 'w' is already registered");
  EXPECT_SG_ERROR(m.register_buffer("w", ones({2})), "Custom: the name 'w' is already registered");
  EXPECT_SG_ERROR(m.register_module("w", std::make_shared<Linear>(1, 1)),
                  "Custom: the name 'w' is already registered");
  EXPECT_SG_ERROR(m.register_parameter("a.b", ones({2})),
                  "Custom: invalid name 'a.b' (names must be non-empty and contain no '.')");
  EXPECT_SG_ERROR(m.register_buffer("", ones({2})), "Custom: invalid name ''");
  EXPECT_SG_ERROR(m.register_parameter("u", Tensor()), "Custom: parameter 'u' is an undefined");
  EXPECT_SG_ERROR(m.register_module<Linear>("l", nullptr), "Custom: submodule 'l' is null");
}

TEST(ModuleRegistration, AModuleCannotHoldItself) {
  // Every walk of the tree (parameters, train, to) would recurse until the stack ran out.
  auto a = std::make_shared<Module>("A");
  EXPECT_SG_ERROR(a->register_module("self", a),
                  "A: submodule 'self' contains this module: a module cannot hold itself");
  auto b = std::make_shared<Module>("B");
  auto c = std::make_shared<Module>("C");
  a->register_module("b", b);
  b->register_module("c", c);
  EXPECT_SG_ERROR(
      c->register_module("a", a),
      "C: submodule 'a' contains this module (as 'a.b.c'): a module cannot hold itself");
  EXPECT_EQ(a->named_modules().size(), 3U);  // the refused registration left the tree as it was
}

TEST(ModuleRegistration, ATensorOrModuleHeldTwiceIsOneParameter) {
  // Tied weights and a shared block, as PyTorch counts them: each tensor once, under its first
  // name, so an optimizer updates it once; state_dict keeps every name.
  Module m("Tied");
  auto shared = std::make_shared<Linear>(2, 2);
  m.register_module("first", shared);
  m.register_module("second", shared);
  Tensor w = m.register_parameter("w", ones({3}));
  m.register_parameter("w_again", w);
  EXPECT_EQ(names_of(m.named_parameters()),
            (std::vector<std::string>{"w", "first.weight", "first.bias"}));
  EXPECT_EQ(m.num_parameters(), 3 + 6);
  EXPECT_EQ(m.state_dict().size(), 6U);
  EXPECT_EQ(m.named_modules().size(), 2U);      // "" and "first"
  optim::SGD sgd(m.parameters(), {.lr = 0.1});  // refused before: "the same tensor as parameter"
}

TEST(ModuleRegistration, ParametersAreLeavesThatRequireGrad) {
  Module m("Custom");
  Tensor base = ones({2}).requires_grad_();
  Tensor p = m.register_parameter("p", base * 3.0);  // computed: detached into its own leaf
  EXPECT_TRUE(p.is_leaf());
  EXPECT_TRUE(p.requires_grad());
  EXPECT_TRUE(tensors_near(p, full({2}, 3.0), 0, 0));
  Tensor frozen = m.register_parameter("frozen", ones({2}), /*requires_grad=*/false);
  EXPECT_FALSE(frozen.requires_grad());
  EXPECT_EQ(m.parameters().size(), 2u);  // still a parameter (saved, moved), just not trained
}

}  // namespace
}  // namespace sg::nn
