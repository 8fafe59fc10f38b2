// Tests for nn/optim/exponential_moving_average.cpp: the average against a hand computation in
// float64 and against torch.optim.swa_utils.AveragedModel, the warm-up of the decay, swap and
// copy_to, tensors that do not change or are not floating, its state through a checkpoint file
// (the resumed average continues to the bit), and errors that leave it as it was.
#include "nn/optim/exponential_moving_average.h"

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "nn/linear.h"
#include "nn/serialize.h"
#include "tests/nn/serialize_testing.h"
#include "tests/support/golden.h"
#include "tests/support/testing.h"
#include "train/checkpoint.h"

namespace sg::optim {
namespace {

using sg::testing::bit_identical;
using sg::testing::golden;
using sg::testing::TempDir;
using sg::testing::tensors_near;

// A Linear(3, 2) and a float buffer, as the golden model; `steps` an int64 buffer (copied).
class Averaged : public nn::Module {
 public:
  explicit Averaged(DType dtype = kFloat32) : Module("Averaged") {
    fc = register_module("fc", std::make_shared<nn::Linear>(3, 2));
    running = register_buffer("running", zeros({2}));
    steps = register_buffer("steps", zeros({1}, kInt64));
    to(dtype);
  }
  // Sets every value to those of `values` (weight, bias, running, steps).
  void set(const std::vector<double>& w, const std::vector<double>& b, const std::vector<double>& r,
           int64_t step) {
    NoGradGuard no_grad;
    fc->weight.copy_(from_vector(w, {2, 3}));
    fc->bias.copy_(from_vector(b, {2}));
    running.copy_(from_vector(r, {2}));
    steps.fill_(static_cast<double>(step));
  }
  std::shared_ptr<nn::Linear> fc;
  Tensor running, steps;
};

const Tensor& named(const nn::NamedTensors& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  throw std::runtime_error("no tensor " + name);
}

const Tensor& entry(const ExponentialMovingAverage& ema, const std::string& name) {
  return named(ema.averaged(), name);
}

TEST(OptimExponentialMovingAverage, MatchesAHandComputationInFloat64) {
  Averaged m(kFloat64);
  const std::vector<std::vector<double>> w = {
      {1, 2, 3, 4, 5, 6}, {0.5, -1, 2, 8, 0, 1}, {3, 3, 3, -3, -3, -3}, {0.25, 0, 1, 2, 7, 9}};
  m.set(w[0], {1, -1}, {0.1, 0.2}, 0);
  for (const bool warmup : {false, true}) {
    m.set(w[0], {1, -1}, {0.1, 0.2}, 0);
    ExponentialMovingAverage ema(m, {.decay = 0.9, .use_num_updates = warmup});
    std::vector<double> expected = w[0];  // weight, by hand
    for (int64_t k = 1; k < 4; ++k) {
      m.set(w[static_cast<size_t>(k)], {1, -1}, {0.1, 0.2}, k);
      ema.update(m);
      const double d = warmup ? std::min(0.9, (1.0 + static_cast<double>(k)) / (10.0 + k)) : 0.9;
      EXPECT_DOUBLE_EQ(ema.decay_at(k), d);
      for (size_t j = 0; j < expected.size(); ++j)
        expected[j] = d * expected[j] + (1 - d) * w[static_cast<size_t>(k)][j];
      EXPECT_TRUE(tensors_near(entry(ema, "fc.weight"), from_vector(expected, {2, 3}), 1e-14, 0))
          << "update " << k << (warmup ? " with the warm-up" : "");
      // Unchanged values stay exactly as they are; the counter is copied.
      EXPECT_TRUE(tensors_near(entry(ema, "running"), from_vector<double>({0.1, 0.2}), 0, 0));
      EXPECT_EQ(entry(ema, "steps").item<int64_t>(), k);
      EXPECT_EQ(ema.num_updates(), k);
    }
  }
  // The warm-up's first decays: 2/11, 3/12, 4/13; the decay caps it.
  ExponentialMovingAverage ema(m, {.decay = 0.25});
  EXPECT_DOUBLE_EQ(ema.decay_at(1), 2.0 / 11);
  EXPECT_DOUBLE_EQ(ema.decay_at(2), 0.25);
  EXPECT_DOUBLE_EQ(ema.decay_at(1000), 0.25);
}

TEST(OptimExponentialMovingAverage, MatchesTorchAveragedModel) {
  for (const char* name : {"ema_float64", "ema_num_updates_float64", "ema_num_updates_float32"}) {
    const auto& c = golden("nn_averaging", name);
    const DType dtype = c.input("fc.weight_state0").dtype();
    class WithBuffer : public nn::Module {
     public:
      explicit WithBuffer(DType dtype) : Module("WithBuffer") {
        fc = register_module("fc", std::make_shared<nn::Linear>(3, 2));
        register_buffer("running", zeros({2}));
        to(dtype);
      }
      std::shared_ptr<nn::Linear> fc;
    } m(dtype);
    auto state = [&](int s) {
      nn::NamedTensors out;
      for (const char* t : {"fc.weight", "fc.bias", "running"})
        out.emplace_back(t, c.input(fmt::format("{}_state{}", t, s)));
      return out;
    };
    nn::load(m, state(0), "state 0");
    ExponentialMovingAverage ema(m, {.decay = c.param<double>("decay"),
                                     .use_num_updates = c.param<bool>("use_num_updates")});
    const double tolerance = dtype == kFloat64 ? 1e-14 : 1e-6;
    for (int s = 1; s < 5; ++s) {
      nn::load(m, state(s), "a state");
      ema.update(m);
      for (const auto& [t, value] : ema.averaged()) {
        EXPECT_TRUE(
            tensors_near(value, c.output(fmt::format("{}_update{}", t, s)), tolerance, tolerance))
            << name << ": " << t << " after update " << s;
      }
    }
  }
}

TEST(OptimExponentialMovingAverage, SwapTwiceRestoresAndCopyToKeepsTheAverage) {
  manual_seed(3);
  Averaged m;
  ExponentialMovingAverage ema(m, {.decay = 0.5, .use_num_updates = false});
  m.set({1, 1, 1, 1, 1, 1}, {2, 2}, {3, 3}, 7);
  ema.update(m);
  nn::NamedTensors trained;
  for (const auto& [name, t] : m.state_dict()) trained.emplace_back(name, t.clone());
  nn::NamedTensors average;
  for (const auto& [name, t] : ema.averaged()) average.emplace_back(name, t.clone());
  const Tensor weight_handle = m.fc->weight;  // an optimizer's handle must stay valid
  ema.swap(m);
  EXPECT_TRUE(bit_identical(m.state_dict(), average));
  EXPECT_TRUE(bit_identical(ema.averaged(), trained));
  EXPECT_TRUE(weight_handle.is_same(m.fc->weight));
  EXPECT_TRUE(tensors_near(weight_handle, named(average, "fc.weight"), 0, 0));
  ema.swap(m);
  EXPECT_TRUE(bit_identical(m.state_dict(), trained));
  EXPECT_TRUE(bit_identical(ema.averaged(), average));
  ema.copy_to(m);
  EXPECT_TRUE(bit_identical(m.state_dict(), average));
  EXPECT_TRUE(bit_identical(ema.averaged(), average));
  EXPECT_FALSE(m.fc->weight.grad_fn());  // written outside any graph
}

TEST(OptimExponentialMovingAverage, StateThroughACheckpointContinuesToTheBit) {
  TempDir dir;
  manual_seed(5);
  Averaged m;
  ExponentialMovingAverage ema(m, {.decay = 0.99});
  auto train_step = [&](int64_t k) {
    const auto x = static_cast<double>(k);
    m.set({x, -x, 0.5 * x, 1, 2, std::sin(x)}, {x, 0.1}, {0.5, x}, k);
  };
  for (int64_t k = 1; k <= 4; ++k) train_step(k), ema.update(m);
  train::save_checkpoint(dir / "last.safetensors", m, nullptr, {}, &ema);
  const train::Checkpoint c = train::read_checkpoint(dir / "last.safetensors");
  EXPECT_EQ(c.model.size(), 4u);  // the model's tensors only: the average is apart
  EXPECT_EQ(c.ema.size(), 6u);    // num_updates, decay, 4 averages
  manual_seed(6);
  Averaged fresh;
  ExponentialMovingAverage resumed(fresh, {.decay = 0.99});
  train::restore_ema(c, resumed);
  EXPECT_EQ(resumed.num_updates(), 4);
  EXPECT_TRUE(bit_identical(resumed.averaged(), ema.averaged()));
  for (int64_t k = 5; k <= 8; ++k) {
    train_step(k);
    ema.update(m);
    resumed.update(m);
  }
  EXPECT_TRUE(bit_identical(resumed.averaged(), ema.averaged()));
  // Another decay is another average: refused, by name.
  ExponentialMovingAverage other(fresh, {.decay = 0.9});
  EXPECT_SG_ERROR(train::restore_ema(c, other),
                  "the moving average in " + (dir / "last.safetensors") +
                      " does not match: ExponentialMovingAverage.load_state: the saved average "
                      "has decay 0.99, this one 0.9");
  // A file without one.
  train::save_checkpoint(dir / "model.safetensors", m, nullptr, {});
  EXPECT_SG_ERROR(train::restore_ema(train::read_checkpoint(dir / "model.safetensors"), resumed),
                  "holds no moving average of the weights");
  // A non-finite average is found when the file is read.
  {
    NoGradGuard no_grad;
    const_cast<Tensor&>(entry(ema, "running")).fill_(std::nan(""));
  }
  train::save_checkpoint(dir / "nan.safetensors", m, nullptr, {}, &ema);
  EXPECT_SG_ERROR(train::read_checkpoint(dir / "nan.safetensors"),
                  "tensor 'ema.shadow.running' holds infinities or NaNs");
}

TEST(OptimExponentialMovingAverage, BadInputIsRefusedAndLeavesTheAverageAsItWas) {
  Averaged m;
  EXPECT_SG_ERROR(ExponentialMovingAverage(m, {.decay = 1.5}),
                  "ExponentialMovingAverage: decay must be in [0, 1], got 1.5");
  EXPECT_SG_ERROR(ExponentialMovingAverage(m, {.decay = -0.1}), "got -0.1");
  nn::Module empty;
  EXPECT_SG_ERROR(ExponentialMovingAverage(empty), "the module has no parameters or buffers");
  ExponentialMovingAverage ema(m);
  nn::Linear other(3, 2);
  EXPECT_SG_ERROR(ema.update(other),
                  "ExponentialMovingAverage.update: the module has 2 parameters and buffers, the "
                  "average 4 (pass the module the average was built from)");
  class Same : public nn::Module {
   public:
    Same() : Module("Same") {
      register_module("fc", std::make_shared<nn::Linear>(4, 2));
      register_buffer("running", zeros({2}));
      register_buffer("steps", zeros({1}, kInt64));
    }
  } shaped;
  EXPECT_SG_ERROR(ema.swap(shaped), "ExponentialMovingAverage.swap: the module's tensor");
  EXPECT_SG_ERROR(ema.copy_to(shaped), "'fc.weight' [2, 4], the average's 'fc.weight' [2, 3]");
  EXPECT_EQ(ema.num_updates(), 0);
  // The module moved to float64 after the average was built: swap rounded its weights through
  // the float32 average (a second swap did not give them back).
  Averaged wide;
  ExponentialMovingAverage narrow_ema(wide);
  wide.to(kFloat64);
  for (const std::string op : {"update", "swap", "copy_to"}) {
    const std::string why = "ExponentialMovingAverage." + op +
                            ": the module's 'running' is float64, the average's float32";
    if (op == "update") EXPECT_SG_ERROR(narrow_ema.update(wide), why);
    if (op == "swap") EXPECT_SG_ERROR(narrow_ema.swap(wide), why);
    if (op == "copy_to") EXPECT_SG_ERROR(narrow_ema.copy_to(wide), why);
  }

  const nn::NamedTensors good = ema.state();
  nn::NamedTensors before;
  for (const auto& [name, t] : ema.averaged()) before.emplace_back(name, t.clone());
  auto without = [&](const std::string& key) {
    nn::NamedTensors out;
    for (const auto& [name, t] : good)
      if (name != key) out.emplace_back(name, t);
    return out;
  };
  auto replaced = [&](const std::string& key, Tensor value) {
    nn::NamedTensors out = without(key);
    out.emplace_back(key, value);
    return out;
  };
  const char* op = "ExponentialMovingAverage.load_state: ";
  EXPECT_SG_ERROR(ema.load_state(without("shadow.fc.bias")),
                  std::string(op) + "missing entry 'shadow.fc.bias'");
  EXPECT_SG_ERROR(ema.load_state(without("num_updates")), "missing entry 'num_updates'");
  EXPECT_SG_ERROR(ema.load_state(replaced("num_updates", scalar_tensor(-1, kInt64))),
                  "'num_updates' = -1 is negative");
  EXPECT_SG_ERROR(ema.load_state(replaced(
                      "num_updates",
                      from_vector(std::vector<int64_t>{std::numeric_limits<int64_t>::max()}, {}))),
                  "'num_updates' = 9223372036854775807 is above the largest count, 2^53");
  EXPECT_SG_ERROR(ema.load_state(replaced("num_updates", scalar_tensor(2.5, kFloat64))),
                  "must be one int64 count");
  EXPECT_SG_ERROR(ema.load_state(replaced("shadow.running", ones({3}))),
                  "entry 'shadow.running' has shape [3] but the average has [2]");
  EXPECT_SG_ERROR(ema.load_state(replaced("shadow.running", ones({2}, kInt64))),
                  "entry 'shadow.running' is int64 but the average is float32");
  nn::NamedTensors extra = good;
  extra.emplace_back("shadow.fc.extra", ones({1}));
  EXPECT_SG_ERROR(ema.load_state(extra), "unexpected entry 'shadow.fc.extra'");
  nn::NamedTensors twice = good;
  twice.push_back(good.back());
  EXPECT_SG_ERROR(ema.load_state(twice), "appears twice");
  EXPECT_TRUE(bit_identical(ema.averaged(), before));
  EXPECT_EQ(ema.num_updates(), 0);
}

}  // namespace
}  // namespace sg::optim
