// The library's training loop over the ranks of `mpirun -np 2` (train/trainer.h with a
// DataParallelRun): two ranks train as one process with the whole batch does (up to the order of
// additions), rank 0 alone writes, and a run stopped and resumed continues every rank's dropout
// stream, bit for bit. Alone (a group of one) these tests skip.
#include <unistd.h>

#include <filesystem>

#include "distributed/process_group.h"
#include "nn/safetensors.h"
#include "tests/distributed/small_mlp.h"
#include "train/metadata.h"
#include "train/trainer.h"

namespace sg::train {
namespace {

namespace fs = std::filesystem;
using namespace sg::testing::small_mlp;

// The same directory on every rank: all ranks are children of the same mpirun.
std::string shared_dir(const std::string& name) {
  return (fs::temp_directory_path() / ("sg_trainer_ddp_" + std::to_string(getppid()) + "_" + name))
      .string();
}

// The small network of the data-parallel tests with dropout between its layers.
class DropoutMlp : public nn::UnaryModule {
 public:
  explicit DropoutMlp(double p) : UnaryModule("DropoutMlp") {
    mlp = register_module("mlp", std::make_shared<Mlp>());
    drop = register_module("drop", std::make_shared<nn::Dropout>(p));
  }
  Tensor forward(const Tensor& x) override {
    return mlp->fc2->forward(drop->forward(mlp->fc1->forward(x).tanh()));
  }
  std::shared_ptr<Mlp> mlp;
  std::shared_ptr<nn::Dropout> drop;
};

// Step s trains on global_batch(s), each rank on the rows the loop gives it; evaluated on batch 999
// (rank 0).
class RowsTask : public TrainingTask {
 public:
  explicit RowsTask(DropoutMlp& model) : model_(model) {}
  Batch next_batch() override {  // the global batch: the loop gives each rank its rows
    const auto [x, y] = global_batch(static_cast<int>(next_++));
    return {{"x", x}, {"y", y}};
  }
  StepOutput training_step(const Batch& batch) override {
    return {nn::mse_loss(model_.forward(batch.at("x")), batch.at("y")), {}, {}};
  }
  Metrics evaluate() override {
    const NoGradGuard no_grad;
    const auto batch = global_batch(999);
    return {{"mse", nn::mse_loss(model_.forward(batch.first), batch.second).item<double>()}};
  }
  nn::Metadata checkpoint_metadata() const override {
    return {{"format", "test-rows"}, {"next", std::to_string(next_)}};
  }
  void load_checkpoint(const Checkpoint& last) override {
    next_ = MetadataReader(last.metadata, last.path).integer("next");
  }

 private:
  DropoutMlp& model_;
  int64_t next_ = 0;
};

// A run from seed 7: over the job's ranks with `distributed`, else this process alone.
FitResult train(const TrainerOptions& options, bool distributed, double dropout) {
  manual_seed(7);
  auto model = std::make_shared<DropoutMlp>(dropout);
  model->to(kFloat64);
  DataParallelRun ranks(model, {.distributed = distributed, .bucket_mb = 1e-4});
  optim::Adam adam(model->parameters(), {.lr = 1e-2});
  optim::LambdaLR schedule(adam, [](int64_t) { return 1.0; });
  RowsTask task(*model);
  return Trainer(*model, adam, schedule, options, &ranks).fit(task);
}

TrainerOptions options_in(const std::string& dir) {
  return {.out_dir = dir, .quiet = true, .steps = 30, .eval_every = 10, .monitor = "mse"};
}

TEST(TrainerDataParallel, TwoRanksTrainAsOneProcessWithTheWholeBatch) {
  auto group = distributed::default_group();
  if (group->world_size() != 2) GTEST_SKIP() << "needs mpirun -np 2";
  const std::string dir = shared_dir("ranks");
  const FitResult ranks = train(options_in(dir), true, 0.0);
  // Each rank also trains alone on the whole batch, into a directory of its own.
  const std::string alone_dir = shared_dir("alone" + std::to_string(group->rank()));
  const FitResult alone = train(options_in(alone_dir), false, 0.0);
  EXPECT_EQ(ranks.world_size, 2);
  EXPECT_EQ(alone.world_size, 1);
  EXPECT_GT(ranks.gradient_bytes, 0);
  EXPECT_EQ(alone.gradient_bytes, 0);
  // Without ZeRO-1 each rank holds all of Adam's state, as one process does.
  EXPECT_EQ(ranks.optimizer_state_bytes,
            (std::vector<int64_t>{alone.optimizer_state_bytes[0], alone.optimizer_state_bytes[0]}));
  ASSERT_EQ(ranks.history.losses.size(), 30u);
  for (size_t i = 0; i < 30; ++i) {
    EXPECT_NEAR(ranks.history.losses[i], alone.history.losses[i], 1e-9 * alone.history.losses[i])
        << "step " << i + 1;
  }
  if (group->rank() == 0) {  // rank 0 evaluated and wrote; the others only trained
    EXPECT_EQ(ranks.history.eval_steps, (std::vector<double>{10, 20, 30}));
    EXPECT_TRUE(fs::exists(dir + "/model.safetensors"));
    EXPECT_NE(ranks.summary.find("trained 30 steps"), std::string::npos);
    EXPECT_NE(ranks.summary.find("2 ranks: "), std::string::npos) << ranks.summary;
  } else {
    EXPECT_TRUE(ranks.history.eval_steps.empty());
    EXPECT_TRUE(ranks.summary.empty());
  }
  fs::remove_all(alone_dir);
  group->barrier();
  if (group->rank() == 0) fs::remove_all(dir);
}

TEST(TrainerDataParallel, AResumedRunContinuesEveryRanksDropoutStream) {
  auto group = distributed::default_group();
  if (group->world_size() != 2) GTEST_SKIP() << "needs mpirun -np 2";
  const std::string straight = shared_dir("straight"), halves = shared_dir("halves");
  const FitResult whole = train(options_in(straight), true, 0.2);
  TrainerOptions first = options_in(halves);
  first.stop_after = 13;
  train(first, true, 0.2);
  TrainerOptions rest = options_in(halves);
  rest.resume = true;
  const FitResult resumed = train(rest, true, 0.2);
  EXPECT_EQ(resumed.history.losses, whole.history.losses);  // bit for bit
  if (group->rank() == 0) {
    const auto md = nn::load_safetensors(straight + "/last.safetensors").metadata;
    const DropoutStreams saved = read_dropout_streams(MetadataReader(md, "last.safetensors"));
    ASSERT_EQ(saved.per_rank.size(), 2u);
    EXPECT_NE(saved.per_rank[0], saved.per_rank[1]);  // a stream per rank
    EXPECT_EQ(saved.global, saved.per_rank[0]);
  }
  group->barrier();
  if (group->rank() == 0) fs::remove_all(straight), fs::remove_all(halves);
}

}  // namespace
}  // namespace sg::train
