#include "nn/serialize.h"

#include <cmath>
#include <optional>

#include "nn/activation.h"
#include "nn/container.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/optim/adam.h"
#include "nn/optim/sgd.h"
#include "nn/transformer.h"
#include "tests/nn/serialize_testing.h"
#include "tests/support/testing.h"
#include "train/checkpoint.h"

namespace sg::nn {
namespace {

using sg::testing::read_bytes;
using sg::testing::TempDir;
using sg::testing::tensors_equal;
using sg::testing::tensors_near;
using sg::testing::write_bytes;

std::shared_ptr<Sequential> make_mlp(uint64_t seed) {
  manual_seed(seed);
  auto mlp = std::make_shared<Sequential>();
  mlp->push_back(std::make_shared<Linear>(4, 8));
  mlp->push_back(std::make_shared<ReLU>());
  mlp->push_back(std::make_shared<Linear>(8, 3));
  return mlp;
}

// Deep copies of every tensor, to check later that nothing changed.
NamedTensors snapshot(const NamedTensors& tensors) {
  NamedTensors out;
  for (const auto& [name, t] : tensors) out.emplace_back(name, t.detach().clone());
  return out;
}

NamedTensors snapshot_on_cpu(const NamedTensors& tensors) {
  NamedTensors out;
  for (const auto& [name, t] : tensors) out.emplace_back(name, t.detach().to(kCPU));
  return out;
}

::testing::AssertionResult all_equal(const NamedTensors& actual, const NamedTensors& expected) {
  if (actual.size() != expected.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < actual.size(); ++i) {
    auto r = tensors_equal(actual[i].second, expected[i].second);
    if (!r || actual[i].first != expected[i].first) {
      return ::testing::AssertionFailure() << actual[i].first << ": " << r.message();
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(CheckpointModule, LoadedModelGivesBitIdenticalOutputs) {
  TempDir dir;
  auto saved = make_mlp(1), fresh = make_mlp(2);
  Tensor x = randn({5, 4});
  ASSERT_FALSE(tensors_equal(fresh->forward(x), saved->forward(x)));
  save(*saved, dir / "mlp.safetensors", {{"hidden", "8"}});
  Metadata metadata = load(*fresh, dir / "mlp.safetensors");
  EXPECT_EQ(metadata, (Metadata{{"hidden", "8"}}));
  EXPECT_TRUE(tensors_equal(fresh->forward(x), saved->forward(x)));
  EXPECT_TRUE(all_equal(fresh->state_dict(), saved->state_dict()));
}

TEST(CheckpointModule, FileIsTheStateDictByDottedNames) {
  TempDir dir;
  auto mlp = make_mlp(1);
  save(*mlp, dir / "mlp.safetensors");
  EXPECT_TRUE(all_equal(load_safetensors(dir / "mlp.safetensors").tensors, mlp->state_dict()));
  EXPECT_EQ(load_safetensors(dir / "mlp.safetensors").tensors[2].first, "2.weight");
}

// Parameters and buffers of every dtype, and the handles layers hold.
class Toy : public Module {
 public:
  Toy(int64_t vocab, bool with_norm, bool with_extra) : Module("Toy") {
    proj = register_module("proj", std::make_shared<Linear>(4, 8));
    if (with_norm) register_module("norm", std::make_shared<LayerNorm>(Shape{8}));
    generator = register_module("generator", std::make_shared<Linear>(8, vocab));
    if (with_extra) register_buffer("foo", zeros({2}));
    counts = register_buffer("counts", randint(0, 100, {3}));
    mask = register_buffer("mask", rand({3}).lt(0.5));
  }
  std::shared_ptr<Linear> proj, generator;
  Tensor counts, mask;
};

TEST(CheckpointModule, RestoresBuffersInPlaceKeepingHandles) {
  TempDir dir;
  manual_seed(1);
  Toy saved(5, true, false);
  manual_seed(2);
  Toy fresh(5, true, false);
  Tensor weight_handle = fresh.proj->weight;
  save(saved, dir / "toy.safetensors");
  load(fresh, dir / "toy.safetensors");
  EXPECT_TRUE(all_equal(fresh.state_dict(), saved.state_dict()));
  EXPECT_TRUE(tensors_equal(weight_handle, saved.proj->weight));  // copied in, not replaced
  EXPECT_TRUE(tensors_equal(fresh.counts, saved.counts));
  EXPECT_TRUE(tensors_equal(fresh.mask, saved.mask));
  EXPECT_TRUE(fresh.proj->weight.requires_grad() && fresh.proj->weight.is_leaf());
}

TEST(CheckpointModule, MismatchListsEveryProblemInOneMessageAndChangesNothing) {
  TempDir dir;
  std::string path = dir / "ckpt.safetensors";
  save(Toy(11, /*with_norm=*/false, /*with_extra=*/true), path);
  Toy model(12, /*with_norm=*/true, /*with_extra=*/false);
  NamedTensors before = snapshot(model.state_dict());
  EXPECT_SG_ERROR(load(model, path),
                  "load: checkpoint " + path +
                      " does not match the model: missing norm.weight, norm.bias; unexpected "
                      "foo; shape mismatch for generator.weight: checkpoint [11, 8] vs model "
                      "[12, 8]; shape mismatch for generator.bias: checkpoint [11] vs model [12]");
  EXPECT_TRUE(all_equal(model.state_dict(), before));
}

// Tensors given in memory: a name twice was checked by its first tensor and copied from its last
// (a [1] broadcast into a [4] weight); an undefined tensor failed with no word of load.
TEST(CheckpointModule, ANameTwiceOrAnUndefinedTensorIsRefused) {
  Toy model(12, /*with_norm=*/false, /*with_extra=*/false);
  NamedTensors tensors = model.state_dict();
  NamedTensors before = snapshot(tensors);
  const std::string first = tensors.front().first;
  tensors.emplace_back(first, full({1}, 5.0));
  EXPECT_SG_ERROR(load(model, tensors, "memory"),
                  "load: checkpoint memory holds '" + first + "' twice");
  tensors.pop_back();
  tensors.front().second = Tensor();
  EXPECT_SG_ERROR(load(model, tensors, "memory"),
                  "load: checkpoint memory holds '" + first + "' as an undefined tensor");
  EXPECT_TRUE(all_equal(model.state_dict(), before));
}

TEST(CheckpointModule, DtypeMismatchIsAnError) {
  TempDir dir;
  auto saved = make_mlp(1);
  saved->to(kFloat64);
  save(*saved, dir / "f64.safetensors");
  auto model = make_mlp(2);
  NamedTensors before = snapshot(model->state_dict());
  EXPECT_SG_ERROR(load(*model, dir / "f64.safetensors"),
                  "dtype mismatch for 0.weight: checkpoint float64 vs model float32; dtype "
                  "mismatch for 0.bias");
  EXPECT_TRUE(all_equal(model->state_dict(), before));
}

// A bfloat16 checkpoint (half the size) loads into a float32 model: every bfloat16 is a float32.
TEST(CheckpointModule, ANarrowerFloatingCheckpointLoadsExactly) {
  TempDir dir;
  auto saved = make_mlp(1);
  NamedTensors halves;
  for (const auto& [name, t] : saved->state_dict()) halves.emplace_back(name, t.to(kBFloat16));
  save_safetensors(dir / "bf16.safetensors", halves);
  auto model = make_mlp(2);
  load(*model, dir / "bf16.safetensors");
  const NamedTensors loaded = model->state_dict();
  for (size_t i = 0; i < halves.size(); ++i) {
    EXPECT_EQ(loaded[i].second.dtype(), kFloat32);
    EXPECT_TRUE(sg::testing::tensors_equal(loaded[i].second, halves[i].second.to(kFloat32)))
        << halves[i].first;
  }
  EXPECT_EQ(sg::train::first_non_finite(halves), std::nullopt);
  halves[1].second = full(halves[1].second.shape(), std::nan("")).to(kBFloat16);
  EXPECT_EQ(sg::train::first_non_finite(halves), halves[1].first);  // bfloat16 is checked too
}

TEST(CheckpointModule, BrokenFilesLeaveTheModelUnchanged) {
  TempDir dir;
  std::string path = dir / "ckpt.safetensors";
  save(*make_mlp(1), path);
  std::string bytes = read_bytes(path);
  auto model = make_mlp(2);
  NamedTensors before = snapshot(model->state_dict());
  write_bytes(path, bytes.substr(0, bytes.size() - 1));  // truncated
  EXPECT_SG_ERROR(load(*model, path), "load_safetensors: " + path + " is not a valid");
  write_bytes(path, bytes.substr(0, 8) + std::string(bytes.size() - 8, 'x'));  // corrupt header
  EXPECT_SG_ERROR(load(*model, path), "the header is not valid JSON");
  EXPECT_SG_ERROR(load(*model, dir / "missing.safetensors"), "cannot open");
  EXPECT_TRUE(all_equal(model->state_dict(), before));
}

// A checkpoint does not remember devices: save from the GPU, load on the CPU, and back.
TEST(CheckpointModule, MovesBetweenDevices) {
  if (!cuda_available()) GTEST_SKIP() << cuda_unavailable_reason();
  TempDir dir;
  auto on_gpu = make_mlp(1);
  on_gpu->to(Device::cuda(0));
  save(*on_gpu, dir / "gpu.safetensors");
  auto on_cpu = make_mlp(2);
  load(*on_cpu, dir / "gpu.safetensors");
  // The parameters arrive bit for bit; the two devices' outputs differ only by rounding (the GPU
  // adds the products of a row in another order, and fuses multiply and add).
  EXPECT_TRUE(all_equal(on_cpu->state_dict(), snapshot_on_cpu(on_gpu->state_dict())));
  Tensor x = randn({5, 4});
  EXPECT_TRUE(tensors_near(on_cpu->forward(x), on_gpu->forward(x.to(Device::cuda(0))).to(kCPU),
                           1e-6, 1e-5));

  auto back = make_mlp(3);
  back->to(Device::cuda(0));
  save(*on_cpu, dir / "cpu.safetensors");
  load(*back, dir / "cpu.safetensors");
  EXPECT_EQ(back->parameters()[0].device(), Device::cuda(0));
  EXPECT_TRUE(all_equal(snapshot_on_cpu(back->state_dict()), on_cpu->state_dict()));
}

// ---- optimizer state: saving mid-training and resuming gives the same run ----

void train_steps(Sequential& model, optim::Optimizer& opt, int steps) {
  for (int i = 0; i < steps; ++i) {
    Tensor x = from_vector<float>({1.0f * i, -2.0f, 0.5f, 3.0f}, {1, 4});
    opt.zero_grad();
    model.forward(x).pow(2.0).mean().backward();
    opt.step();
  }
}

template <typename Opt, typename Options>
void expect_resume_matches(const Options& options) {
  TempDir dir;
  auto model = make_mlp(1);
  Opt opt(model->parameters(), options);
  train_steps(*model, opt, 3);
  save(*model, dir / "model.safetensors");
  save(opt, dir / "opt.safetensors", {{"epoch", "3"}});
  train_steps(*model, opt, 2);

  auto resumed = make_mlp(2);
  Opt resumed_opt(resumed->parameters(), options);
  load(*resumed, dir / "model.safetensors");
  EXPECT_EQ(load(resumed_opt, dir / "opt.safetensors"), (Metadata{{"epoch", "3"}}));
  EXPECT_EQ(resumed_opt.step_count(), 3);
  train_steps(*resumed, resumed_opt, 2);
  EXPECT_TRUE(all_equal(resumed->state_dict(), model->state_dict()));
  EXPECT_TRUE(all_equal(resumed_opt.state(), opt.state()));
}

TEST(CheckpointOptimizer, AdamResumesBitIdentically) {
  expect_resume_matches<optim::Adam>(optim::AdamOptions{.lr = 0.01, .weight_decay = 0.1});
}

TEST(CheckpointOptimizer, SgdWithMomentumResumesBitIdentically) {
  expect_resume_matches<optim::SGD>(optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
}

TEST(CheckpointOptimizer, WrongOptimizerNamesThePathAndChangesNothing) {
  TempDir dir;
  auto model = make_mlp(1);
  optim::Adam adam(model->parameters(), {.lr = 0.01});
  train_steps(*model, adam, 1);
  save(adam, dir / "adam.safetensors");
  optim::SGD sgd(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  train_steps(*model, sgd, 1);
  NamedTensors before = snapshot(sgd.state());
  EXPECT_SG_ERROR(load(sgd, dir / "adam.safetensors"),
                  "load: optimizer checkpoint " + (dir / "adam.safetensors") +
                      " does not match the " + sgd.name() + " optimizer");
  EXPECT_TRUE(all_equal(sgd.state(), before));
}

// ---- the full model: the config travels in the metadata ----

TEST(CheckpointTransformer, RoundTripThroughMetadataGivesBitIdenticalLogits) {
  TempDir dir;
  TransformerOptions o;
  o.src_vocab = 11;
  o.tgt_vocab = 13;
  o.d_model = 16;
  o.heads = 2;
  o.num_encoder_layers = o.num_decoder_layers = 2;
  o.d_ff = 32;
  o.max_len = 20;
  manual_seed(1);
  Transformer model(o);
  model.eval();
  save(model, dir / "t.safetensors", {{"transformer_options", o.to_string()}});

  manual_seed(2);
  Metadata metadata = load_safetensors(dir / "t.safetensors").metadata;
  Transformer fresh(TransformerOptions::parse(metadata.at("transformer_options")));
  fresh.eval();
  Tensor src = from_vector<int64_t>({1, 5, 7, 2, 3, 0}, {2, 3});
  Tensor tgt = from_vector<int64_t>({1, 4, 12, 6}, {2, 2});
  ASSERT_FALSE(tensors_equal(fresh(src, tgt), model(src, tgt)));
  load(fresh, dir / "t.safetensors");
  EXPECT_EQ(fresh.options(), o);
  EXPECT_TRUE(tensors_equal(fresh(src, tgt), model(src, tgt)));

  // A checkpoint of another vocabulary size is refused with the shapes named.
  o.tgt_vocab = 12;
  Transformer other(o);
  EXPECT_SG_ERROR(load(other, dir / "t.safetensors"),
                  "shape mismatch for generator.weight: checkpoint [13, 16] vs model [12, 16]");
}

}  // namespace
}  // namespace sg::nn
