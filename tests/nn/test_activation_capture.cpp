// Forward hooks (nn/forward_hook.h) and ActivationCapture (nn/activation_capture.h): hooks fire
// after each forward in execution order and go away with their handles; the capture records
// outputs under qualified names, the loss's gradient with respect to each output, the parameters'
// gradients, and writes them to a file that compare_captures reads.
#include "nn/activation_capture.h"

#include <algorithm>

#include "nn/activation.h"
#include "nn/capture_compare.h"
#include "nn/container.h"
#include "nn/linear.h"
#include "nn/transformer.h"
#include "tests/nn/serialize_testing.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::TempDir;
using sg::testing::tensors_near;

// fc2(relu(fc1(x))), float64.
std::shared_ptr<Sequential> two_layer() {
  manual_seed(7);
  auto net = std::make_shared<Sequential>();
  net->push_back(std::make_shared<Linear>(3, 5));
  net->push_back(std::make_shared<ReLU>());
  net->push_back(std::make_shared<Linear>(5, 2));
  net->to(kFloat64);
  return net;
}

Tensor input() {
  manual_seed(8);
  return randn({4, 3}, TensorOptions(kFloat64));
}

TEST(CaptureForwardHook, RunsAfterEachForwardInExecutionOrder) {
  auto net = two_layer();
  std::vector<std::string> seen;
  std::vector<Tensor> outputs;
  std::vector<RemovableHandle> handles;
  for (const auto& [name, m] : net->named_modules()) {
    handles.push_back(m->register_forward_hook([&, name = name](Module& mod, const Tensor& y) {
      seen.push_back(name + ":" + mod.type_name());
      outputs.push_back(y);
    }));
  }
  Tensor y = net->forward(input());
  // Children finish before their container: the root "" comes last.
  EXPECT_EQ(seen, (std::vector<std::string>{"0:Linear", "1:ReLU", "2:Linear", ":Sequential"}));
  ASSERT_EQ(outputs.size(), 4u);
  EXPECT_TRUE(tensors_near(outputs[3], y, 0, 0));
  EXPECT_TRUE(tensors_near(outputs[1], relu(outputs[0]), 0, 0));
}

TEST(CaptureForwardHook, HandlesRemoveTheirHooks) {
  auto net = two_layer();
  int calls = 0;
  auto count = [&](Module&, const Tensor&) { ++calls; };
  RemovableHandle a = (*net)[0]->register_forward_hook(count);
  {
    RemovableHandle b = (*net)[0]->register_forward_hook(count);
    EXPECT_TRUE(b.active());
    net->forward(input());
    EXPECT_EQ(calls, 2);
  }  // b destroyed: its hook is gone
  net->forward(input());
  EXPECT_EQ(calls, 3);
  RemovableHandle moved = std::move(a);
  EXPECT_FALSE(a.active());  // NOLINT(bugprone-use-after-move): a moved-from handle is empty
  moved.remove();
  moved.remove();  // twice is fine
  net->forward(input());
  EXPECT_EQ(calls, 3);
  // A handle may outlive its module.
  RemovableHandle late;
  {
    auto lone = std::make_shared<Linear>(2, 2);
    late = lone->register_forward_hook(count);
  }
  EXPECT_FALSE(late.active());
  late.remove();
  EXPECT_SG_ERROR((*net)[0]->register_forward_hook(ForwardHook()), "the hook is empty");
}

TEST(CaptureActivations, RecordsOutputsAndTheirGradients) {
  auto net = two_layer();
  ActivationCapture capture(*net);
  Tensor y = net->forward(input());
  Tensor loss = (y * y).sum();
  capture.backward(loss);
  const auto& r = capture.records();
  ASSERT_EQ(r.size(), 3u);  // the root is not recorded
  EXPECT_EQ(r[0].name, "0");
  EXPECT_EQ(r[2].name, "2");
  EXPECT_TRUE(tensors_near(r[2].output, y, 0, 0));
  // d(sum y²)/dy = 2y; through fc2: 2y · W2; through the ReLU: zero where fc1's output < 0.
  const Tensor w2 = std::dynamic_pointer_cast<Linear>((*net)[2])->weight;
  EXPECT_TRUE(tensors_near(r[2].grad, 2.0 * y.detach(), 1e-12, 1e-12));
  EXPECT_TRUE(tensors_near(r[1].grad, matmul(2.0 * y.detach(), w2.detach()), 1e-12, 1e-12));
  Tensor positive = r[0].output.detach().gt(0.0).to(kFloat64);
  EXPECT_TRUE(tensors_near(r[0].grad, r[1].grad * positive, 1e-12, 1e-12));
  // The parameters' .grad() is what a plain backward gives.
  auto plain = two_layer();
  Tensor y2 = plain->forward(input());
  (y2 * y2).sum().backward();
  auto ours = net->named_parameters(), theirs = plain->named_parameters();
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_TRUE(tensors_near(ours[i].second.grad(), theirs[i].second.grad(), 0, 0))
        << ours[i].first;
  }
  EXPECT_SG_ERROR(capture.backward(y), "expected a scalar loss, got shape [4, 2]");
}

TEST(CaptureActivations, EntriesComeInForwardThenBackwardOrder) {
  auto net = two_layer();
  ActivationCapture capture(*net);
  Tensor y = net->forward(input());
  capture.backward(y.sum());
  std::vector<std::string> names;
  for (const auto& [name, t] : capture.entries()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"0", "1", "2", "loss", "grad_output.2",
                                             "grad.2.weight", "grad.2.bias", "grad_output.1",
                                             "grad_output.0", "grad.0.weight", "grad.0.bias"}));
  capture.remove();
  net->forward(input());
  EXPECT_EQ(capture.records().size(), 3u);  // no hooks left: nothing new recorded
  capture.clear();
  EXPECT_TRUE(capture.entries().empty());
}

TEST(CaptureActivations, SecondCallOfAModuleIsNumbered) {
  TransformerOptions o;
  o.src_vocab = o.tgt_vocab = 7;
  o.d_model = 8;
  o.heads = 2;
  o.d_ff = 16;
  o.num_encoder_layers = o.num_decoder_layers = 1;
  o.dropout = 0.0;
  o.max_len = 16;
  manual_seed(3);
  Transformer model(o);
  ActivationCapture capture(model);
  Tensor src = from_vector<int64_t>({1, 3, 4, 2, 1, 5}, {2, 3});
  Tensor logits = model(src, src);
  capture.backward(logits.sum());
  std::vector<std::string> names;
  for (const auto& r : capture.records()) names.push_back(r.name);
  auto at = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) - names.begin();
  };
  ASSERT_LT(at("positional#2"), static_cast<ptrdiff_t>(names.size()));
  EXPECT_LT(at("src_embed"), at("positional"));
  EXPECT_LT(at("positional"), at("encoder.layers.0.self_attn.w_o"));
  EXPECT_LT(at("encoder.layers.0.self_attn.w_o"), at("encoder.layers.0.self_attn"));
  EXPECT_LT(at("encoder"), at("tgt_embed"));
  EXPECT_LT(at("tgt_embed"), at("positional#2"));
  EXPECT_EQ(names.back(), "generator");
  // Dropout returns its input: the two records share a tensor and its gradient.
  const auto& rec = capture.records();
  EXPECT_TRUE(tensors_near(rec[at("dropout")].grad, rec[at("positional")].grad, 0, 0));
}

TEST(CaptureActivations, AModuleRegisteredTwiceIsRecordedOncePerCall) {
  auto shared = std::make_shared<ReLU>();
  Sequential net;
  net.push_back(shared);
  net.push_back(shared);
  ActivationCapture capture(net);
  net.forward(input());
  std::vector<std::string> names;
  for (const auto& r : capture.records()) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"0", "0#2"}));
}

TEST(CaptureActivations, FileRoundTripComparesClean) {
  TempDir dir;
  auto net = two_layer();
  ActivationCapture capture(*net);
  Tensor y = net->forward(input());
  capture.backward((y * y).mean());
  const std::string path = (dir.path() / "ours.safetensors").string();
  capture.save(path, {{"written_by", "test"}});
  SafetensorsFile file = load_safetensors(path);
  EXPECT_EQ(file.metadata.at("written_by"), "test");
  EXPECT_EQ(file.metadata.at("order").substr(0, 12), "0,1,2,loss,g");
  ASSERT_EQ(file.tensors.size(), capture.entries().size());
  EXPECT_TRUE(tensors_near(file.tensors[3].second, (y * y).mean().detach(), 0, 0));
  EXPECT_FALSE(compare_captures(file, file, 0, 0).first_divergent.has_value());
  // The same step with one weight nudged: fc1's output is the first to differ.
  auto other = two_layer();
  {
    NoGradGuard no_grad;
    std::dynamic_pointer_cast<Linear>((*other)[0])->bias.add_(1e-3);
  }
  ActivationCapture second(*other);
  Tensor y2 = other->forward(input());
  second.backward((y2 * y2).mean());
  second.save((dir.path() / "other.safetensors").string());
  auto report = compare_captures(
      file, load_safetensors((dir.path() / "other.safetensors").string()), 1e-9, 1e-9);
  ASSERT_TRUE(report.first_divergent.has_value());
  EXPECT_EQ(report.entries[*report.first_divergent].name, "0");
}

}  // namespace
}  // namespace sg::nn
