// Tests for train/trainer.cpp, the training loop, on a task small enough to run in
// milliseconds (a two-layer regressor with dropout): evaluations and the best model by a metric,
// an exact resume, the divergence guard, reads every sync_every steps, the moving average and
// checkpoint averaging, and the errors a caller can meet.
#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/optim/adam.h"
#include "nn/safetensors.h"
#include "tests/nn/serialize_testing.h"
#include "tests/support/testing.h"
#include "train/average_checkpoints.h"
#include "train/fit_report.h"
#include "train/metadata.h"
#include "train/run_directory.h"

namespace sg::train {
namespace {

namespace fs = std::filesystem;
using sg::testing::TempDir;
using sg::testing::write_bytes;

struct TinyRegressor : nn::Module {
  TinyRegressor() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 16));
    drop = register_module("drop", std::make_shared<nn::Dropout>(0.1));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(16, 1));
  }
  Tensor forward(const Tensor& x) { return fc2->forward(drop->forward(fc1->forward(x).relu())); }
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::Dropout> drop;
};

Tensor target_of(const Tensor& x) {
  return x.matmul(from_vector(std::vector<float>{1, -2, 0.5, 3}, {4, 1}).to(x.device())) + 1.0;
}

// y = x·w + 1 from a data stream of its own (its state in every checkpoint); evaluated on 64
// fixed points as "mse" and "fit" = 1 / (1 + mse) (more is better).
class Regression : public TrainingTask {
 public:
  explicit Regression(TinyRegressor& model) : model_(model), data_(7) {}

  Batch next_batch() override {
    if (rowless_batch) return {{"x", scalar_tensor(1.0)}};
    return {{"x", randn({16, 4}, data_)}};
  }
  StepOutput training_step(const Batch& batch) override {
    ++steps_seen;
    deterministic_steps += are_deterministic_algorithms_enabled();
    const Tensor& x = batch.at("x");
    Tensor loss = nn::mse_loss(model_.forward(x), target_of(x));
    if (steps_seen == nan_at) loss = loss * std::nan("");
    return {loss, {}, {}};
  }
  Metrics evaluate() override {
    const NoGradGuard no_grad;
    model_.eval();
    Generator held_out(99);
    Tensor x = randn({64, 4}, held_out).to(device);
    const double mse = nn::mse_loss(model_.forward(x), target_of(x)).item<double>();
    return {{"mse", mse}, {"fit", 1 / (1 + mse)}};
  }
  nn::Metadata checkpoint_metadata() const override {
    nn::Metadata md{{"format", "test-regression"},
                    {"data_rng", std::to_string(data_.state())},
                    {"config.width", "16"}};
    if (!extra_key.empty()) md[extra_key] = "1";
    return md;
  }
  void load_checkpoint(const Checkpoint& last) override {
    const MetadataReader md(last.metadata, last.path);
    md.expect_format("test-regression", "a regression checkpoint");
    data_.set_state(md.unsigned_integer("data_rng"));
  }
  std::vector<NamedPath> input_files() const override {
    if (input.empty()) return {};
    return {{"--data", input}};
  }
  void on_evaluation(int64_t step, const Metrics& /*metrics*/, bool best) override {
    evaluations.push_back(step);
    bests.push_back(best);
    if (at_evaluation) at_evaluation(step);
  }
  void on_train_end(const History& /*history*/) override {
    for (const std::string& name : outputs) write_bytes(out_dir + "/" + name, "<svg/>");
  }
  std::vector<std::string> output_files() const override { return outputs; }

  Device device = kCPU;                        // the model's, where evaluate() puts its points
  int64_t steps_seen = 0, nan_at = 0;          // nan_at > 0: that step's loss is NaN
  int64_t deterministic_steps = 0;             // steps run in deterministic mode
  std::string extra_key;                       // a metadata key the task should not write
  bool rowless_batch = false;                  // next_batch gives a 0-d tensor
  std::string input;                           // a file the task reads, as --data
  std::function<void(int64_t)> at_evaluation;  // called with the step of each evaluation
  std::vector<std::string> outputs;            // charts on_train_end writes into out_dir
  std::string out_dir;
  std::vector<int64_t> evaluations;
  std::vector<bool> bests;

 private:
  TinyRegressor& model_;
  Generator data_;
};

TrainerOptions options_in(const std::string& dir) {
  return {.out_dir = dir, .quiet = true, .steps = 30, .eval_every = 10, .monitor = "mse"};
}

// A fresh model, optimizer and schedule from seed 1, as a program builds them, then fit().
struct Training {
  struct Seed {
    Seed() { manual_seed(1); }
  } seed;  // first: the model's initial weights come from seed 1
  TinyRegressor model;
  std::unique_ptr<optim::Adam> optimizer;
  std::unique_ptr<optim::LRScheduler> schedule;
  std::unique_ptr<Regression> task;
  std::unique_ptr<Trainer> trainer;

  explicit Training(const TrainerOptions& options, int64_t nan_at = 0, Device device = kCPU) {
    model.to(device);  // before the optimizer: its state is made next to the parameters
    optimizer = std::make_unique<optim::Adam>(model.parameters(), optim::AdamOptions{.lr = 1e-2});
    schedule = std::make_unique<optim::LambdaLR>(
        *optimizer, [](int64_t step) { return 1.0 / (1.0 + 0.01 * static_cast<double>(step)); });
    task = std::make_unique<Regression>(model);
    task->nan_at = nan_at;
    task->device = device;
    trainer = std::make_unique<Trainer>(model, *optimizer, *schedule, options);
  }
  FitResult fit() { return trainer->fit(*task); }
};

// The same names, in the same order, with the same bits.
void expect_same(const nn::NamedTensors& a, const nn::NamedTensors& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first) << what;
    EXPECT_TRUE(sg::testing::tensors_equal(a[i].second, b[i].second)) << a[i].first << ": " << what;
  }
}

void expect_same_tensors(const std::string& a, const std::string& b) {
  expect_same(nn::load_safetensors(a).tensors, nn::load_safetensors(b).tensors, a + " vs " + b);
}

// What a finished fit says: the summary a program prints, in the task's words, and the
// --metrics-json object, which holds what FitResult holds.
TEST(TrainLoop, SummaryAndMetricsJson) {
  TempDir dir;
  TrainerOptions o = options_in(dir / "run");
  o.metrics_json = dir / "metrics.json";
  Training run(o);
  const FitResult r = run.fit();
  EXPECT_NE(r.summary.find("trained 30 steps in "), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find(
                fmt::format("best, at step {}: {}\n", r.best_step, run.task->describe(r.best))),
            std::string::npos)
      << r.summary;
  std::ifstream in(o.metrics_json);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j, fit_result_json(r, *run.task, o));
  EXPECT_EQ(j.at("config"), (nlohmann::json{{"width", "16"}}));
  EXPECT_EQ(j.at("steps"), 30);
  EXPECT_EQ(j.at("best_step"), r.best_step);
  EXPECT_EQ(j.at("best").at("mse"), r.best.at("mse"));
  EXPECT_EQ(j.at("final_loss"), r.history.losses.back());
  EXPECT_EQ(j.at("evaluated_weights"), "trained");
  ASSERT_EQ(j.at("evals").size(), 3u);
  EXPECT_EQ(j.at("evals")[2].at("step"), 30);
  EXPECT_EQ(j.at("evals")[2].at("mse"), r.history.eval("mse")[2]);
  EXPECT_FALSE(j.contains("averaged"));
  // Alone: no gradient traffic, and Adam's two moments of every float32 weight.
  int64_t weights = 0;
  for (const Tensor& p : run.model.parameters()) weights += p.numel();
  EXPECT_EQ(j.at("gradient_bytes_per_step"), 0);
  EXPECT_EQ(j.at("optimizer_state_bytes_per_rank"), (nlohmann::json{2 * 4 * weights}));
  EXPECT_EQ(r.summary.find("ranks:"), std::string::npos) << r.summary;
  EXPECT_TRUE(fs::exists(dir / "run/loss.svg"));  // the loop's chart, for every task
  // A metrics path the end of the run could not replace is refused before the first step.
  TrainerOptions to_directory = options_in(dir / "to_directory");
  to_directory.metrics_json = dir / "run";
  Training refused(to_directory);
  EXPECT_SG_ERROR(refused.fit(),
                  "--metrics-json: cannot write " + (dir / "run") + ": it is a directory");
  EXPECT_EQ(refused.task->steps_seen, 0);
  // Stopped before the first evaluation: the summary says when one comes.
  TrainerOptions early = options_in(dir / "early");
  early.stop_after = 5;
  EXPECT_NE(Training(early).fit().summary.find(
                "no evaluation yet (one comes every --eval-every 10 steps)"),
            std::string::npos);
}

TEST(TrainLoop, TrainsEvaluatesAndKeepsTheBestByItsMetric) {
  TempDir dir;
  Training run(options_in(dir / "min"));
  const FitResult r = run.fit();
  ASSERT_EQ(r.steps, 30);
  ASSERT_EQ(r.history.losses.size(), 30u);
  EXPECT_LT(r.history.losses.back(), 0.5 * r.history.losses.front());
  EXPECT_EQ(r.history.eval_steps, (std::vector<double>{10, 20, 30}));
  EXPECT_EQ(run.task->evaluations, (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(r.history.eval("train_seconds").size(), 3u);
  // The best is the lowest mse, the later one on a tie, and the callback was told so.
  const std::vector<double>& mse = r.history.eval("mse");
  size_t best = 0;
  for (size_t i = 1; i < mse.size(); ++i) best = mse[i] <= mse[best] ? i : best;
  EXPECT_EQ(r.best_step, 10 * static_cast<int64_t>(best + 1));
  EXPECT_EQ(r.best.at("mse"), mse[best]);
  EXPECT_TRUE(run.task->bests[0]);
  EXPECT_EQ(run.task->bests[best], true);
  const SavedRunState saved = saved_run_state(
      nn::load_safetensors(dir / "min/model.safetensors").metadata, "model.safetensors");
  EXPECT_EQ(saved.best_step, r.best_step);
  EXPECT_EQ(saved.step, r.best_step);
  EXPECT_EQ(saved.weights, "trained");
  EXPECT_EQ(saved.best.at("mse"), mse[best]);
  EXPECT_TRUE(fs::exists(dir / "min/last.safetensors"));
  // Every key the loop writes is one it reserves, so a task cannot overwrite it.
  for (const auto& [key, value] : nn::load_safetensors(dir / "min/last.safetensors").metadata) {
    if (key == "format" || key == "data_rng" || key == "config.width") continue;  // the task's
    EXPECT_NE(std::find(Trainer::kLoopKeys.begin(), Trainer::kLoopKeys.end(), key),
              Trainer::kLoopKeys.end())
        << key;
  }

  // The same run, keeping the highest "fit" instead, keeps the same model.
  TrainerOptions o = options_in(dir / "max");
  o.monitor = "fit", o.maximize = true;
  Training by_fit(o);
  EXPECT_EQ(by_fit.fit().best_step, r.best_step);
  expect_same_tensors(dir / "min/model.safetensors", dir / "max/model.safetensors");
}

// A run that starts over (--overwrite) removes the old run's charts with its checkpoints: one
// killed before its end leaves no chart of another run beside its own checkpoints. A resume keeps
// them: they are the same run's.
TEST(TrainLoop, StartingOverRemovesTheOldRunsChartsAndAResumeKeepsThem) {
  TempDir dir;
  TrainerOptions o = options_in(dir / "run");
  const std::string loss = dir / "run/loss.svg", chart = dir / "run/chart.svg";
  Training first(o);
  first.task->outputs = {"chart.svg"}, first.task->out_dir = dir / "run";
  first.fit();
  ASSERT_TRUE(fs::exists(loss) && fs::exists(chart));
  write_bytes(dir / "run/notes.txt", "mine");  // not a file of the run: left alone
  o.overwrite = true;
  Training again(o);
  again.task->outputs = {"chart.svg"}, again.task->out_dir = dir / "run";
  std::vector<bool> seen_at_first_evaluation;
  again.task->at_evaluation = [&](int64_t step) {
    if (step == 10) seen_at_first_evaluation = {fs::exists(loss), fs::exists(chart)};
  };
  again.fit();
  EXPECT_EQ(seen_at_first_evaluation, (std::vector<bool>{false, false}));
  EXPECT_TRUE(fs::exists(loss) && fs::exists(chart) && fs::exists(dir / "run/notes.txt"));
  o.overwrite = false, o.resume = true, o.steps = 40;
  Training resumed(o);
  resumed.task->at_evaluation = [&](int64_t step) {
    if (step == 40) {
      EXPECT_TRUE(fs::exists(loss) && fs::exists(chart));
    }
  };
  resumed.fit();
  EXPECT_EQ(resumed.task->evaluations, (std::vector<int64_t>{40}));
}

TEST(TrainLoop, ResumeContinuesBitForBit) {
  TempDir dir;
  TrainerOptions o = options_in(dir / "whole");
  o.checkpoint_every = 5, o.average_last = 2, o.ema_decay = 0.9;
  Training whole(o);
  const FitResult w = whole.fit();

  o.out_dir = dir / "halves";
  o.stop_after = 17;  // mid-way between checkpoints and evaluations
  Training first(o);
  EXPECT_EQ(first.fit().steps, 17);
  o.stop_after = 0, o.resume = true;
  Training second(o);
  const FitResult h = second.fit();
  EXPECT_EQ(h.steps, 30);
  EXPECT_EQ(h.history.losses, w.history.losses);
  EXPECT_EQ(h.history.eval("mse"), w.history.eval("mse"));
  EXPECT_EQ(h.best_step, w.best_step);
  EXPECT_EQ(h.averaged_steps, (std::vector<int64_t>{25, 30}));
  for (const char* file : {"last.safetensors", "model.safetensors", "averaged.safetensors",
                           "checkpoint-25.safetensors", "checkpoint-30.safetensors"}) {
    expect_same_tensors(dir / ("whole/" + std::string(file)),
                        dir / ("halves/" + std::string(file)));
  }
  // A finished run resumed again changes nothing a longer run would see.
  Training third(o);
  third.fit();
  expect_same_tensors(dir / "whole/last.safetensors", dir / "halves/last.safetensors");
  EXPECT_EQ(nn::load_safetensors(dir / "whole/last.safetensors").metadata.at("global_rng"),
            nn::load_safetensors(dir / "halves/last.safetensors").metadata.at("global_rng"));

  o.resume = false;
  EXPECT_SG_ERROR(Training(o).fit(), "pass --resume to continue it or --overwrite to start over");
  // A resumed run keeps its precision.
  o.resume = true, o.bf16 = true;
  EXPECT_SG_ERROR(Training(o).fit(),
                  "was trained in float32, and this run asks for bfloat16 autocast: a resumed run "
                  "keeps its precision (drop --bf16, or train another run with another --out or "
                  "--overwrite)");
}

// A killed run resumes from the last.safetensors written mid-run (not at a stop_after end): the
// schedule's lr of the next step is recomputed from the restored step count, so the run goes on
// as if never stopped (the lr the file holds is that of the step just taken).
TEST(TrainLoop, AKilledRunResumesFromACheckpointWrittenMidRunBitForBit) {
  TempDir dir;
  TrainerOptions o = options_in(dir / "run");
  o.checkpoint_every = 10;
  Training whole(o);
  // At the evaluation of step 20, last.safetensors is still step 10's: keep it, as a kill at
  // step 15 would have left it.
  whole.task->at_evaluation = [&](int64_t step) {
    if (step == 20) fs::copy_file(dir / "run/last.safetensors", dir / "step10.safetensors");
  };
  const FitResult w = whole.fit();
  fs::copy_file(dir / "step10.safetensors", dir / "run/last.safetensors",
                fs::copy_options::overwrite_existing);
  o.resume = true;
  const FitResult resumed = Training(o).fit();
  EXPECT_EQ(resumed.history.losses, w.history.losses);
  EXPECT_EQ(resumed.history.eval("mse"), w.history.eval("mse"));
}

TEST(TrainLoop, ADivergedRunStopsBeforeAnythingBrokenIsSaved) {
  TempDir dir;
  TrainerOptions o = options_in(dir / "run");
  o.eval_every = 5, o.sync_every = 4, o.checkpoint_every = 5;
  o.divergence_advice = "lower the lr";
  Training run(o, /*nan_at=*/7);
  EXPECT_SG_ERROR(run.fit(),
                  "step 7: the training loss is nan; training stopped (lower the lr, or resume "
                  "from the last checkpoint)");
  // The files of step 5 stay; nothing after it was written.
  EXPECT_EQ(
      saved_run_state(nn::load_safetensors(dir / "run/last.safetensors").metadata, "last").step, 5);
  EXPECT_EQ(
      saved_run_state(nn::load_safetensors(dir / "run/model.safetensors").metadata, "model").step,
      5);
  EXPECT_NO_THROW(read_checkpoint(dir / "run/model.safetensors"));  // finite weights
}

TEST(TrainLoop, ItHoldsItsDirectoryAndAResumeNeverGoesBack) {
  TempDir dir;
  TrainerOptions o = options_in(dir / "run");
  Training first(o);
  first.task->at_evaluation = [&](int64_t) {  // while it trains, nobody else may
    EXPECT_SG_ERROR(static_cast<void>(RunDirectory(dir / "run").lock()),
                    "is training in this directory");
  };
  first.fit();
  // A run at step 30 resumed with --steps 20 was rewritten as a 20-step run, exit 0.
  o.resume = true, o.steps = 20;
  EXPECT_SG_ERROR(Training(o).fit(),
                  "--resume: the run in " + (dir / "run") +
                      " is at step 30 already, past --steps 20; give --steps 30 or more");
}

TEST(TrainLoop, ReadingTheLossEveryFewStepsChangesNoValue) {
  TempDir dir;
  TrainerOptions o = options_in(dir / "one");
  Training every(o);
  const FitResult a = every.fit();
  o.out_dir = dir / "seven", o.sync_every = 7;
  Training seldom(o);
  const FitResult b = seldom.fit();
  EXPECT_EQ(a.history.losses, b.history.losses);
  expect_same_tensors(dir / "one/last.safetensors", dir / "seven/last.safetensors");
}

TEST(TrainLoop, TheMovingAverageIsEvaluatedAndSavedAndTrainingGoesOnFromItsOwnWeights) {
  TempDir dir;
  TrainerOptions o = options_in(dir / "ema");
  o.ema_decay = 0.9, o.eval_every = 30;  // one evaluation, at the end
  Training run(o);
  run.fit();
  const nn::SafetensorsFile best = nn::load_safetensors(dir / "ema/model.safetensors");
  EXPECT_EQ(best.metadata.at("weights"), "ema");
  const nn::NamedTensors& average = run.trainer->ema()->averaged();
  expect_same(best.tensors, average, "model.safetensors vs the moving average");
  // last.safetensors holds the trained weights, which are the model's, not the average.
  const nn::NamedTensors trained = run.model.state_dict();
  expect_same(read_checkpoint(dir / "ema/last.safetensors").model, trained, "last vs the model");
  EXPECT_FALSE(sg::testing::tensors_equal(trained[0].second, average[0].second));
}

TEST(TrainLoop, TheMeanOfTheLastCheckpointsIsEvaluatedAndSaved) {
  TempDir dir;
  TrainerOptions o = options_in(dir / "avg");
  o.steps = 20, o.checkpoint_every = 5, o.average_last = 3;
  Training run(o);
  const FitResult r = run.fit();
  EXPECT_EQ(r.averaged_steps, (std::vector<int64_t>{10, 15, 20}));
  EXPECT_TRUE(r.averaged.contains("mse"));
  EXPECT_FALSE(fs::exists(dir / "avg/checkpoint-5.safetensors"));  // the newest 3 are kept
  const nn::SafetensorsFile averaged = nn::load_safetensors(dir / "avg/averaged.safetensors");
  const SavedRunState s = saved_run_state(averaged.metadata, "averaged.safetensors");
  EXPECT_EQ(s.weights, "average");
  EXPECT_EQ(s.averaged_steps, r.averaged_steps);
  const nn::NamedTensors mean = average_checkpoints({dir / "avg/checkpoint-10.safetensors",
                                                     dir / "avg/checkpoint-15.safetensors",
                                                     dir / "avg/checkpoint-20.safetensors"});
  expect_same(averaged.tensors, mean, "averaged.safetensors vs the mean");
  // The model holds its trained weights again after the mean was evaluated.
  expect_same(read_checkpoint(dir / "avg/last.safetensors").model,
              nn::load_safetensors(dir / "avg/checkpoint-20.safetensors").tensors,
              "last vs checkpoint-20");
}

// No output lands on an input or on the run's own files, and a resume reads the same input.
TEST(TrainLoop, OutputsNeverReplaceInputsOrTheRunsFilesAndAResumeReadsTheSameInput) {
  TempDir dir;
  const std::string data = dir / "data.txt";
  std::ofstream(data) << "the task's data\n";
  const auto fit_with = [&](auto change, bool resume = false) {
    TrainerOptions o = options_in(dir / "run");
    o.resume = resume;
    change(o);
    Training run(o);
    run.task->input = data;
    return run.fit();
  };
  EXPECT_SG_ERROR(fit_with([&](TrainerOptions& o) { o.metrics_json = data; }),
                  "--metrics-json " + data + " is --data (" + data + "): writing there would");
  EXPECT_SG_ERROR(fit_with([&](TrainerOptions& o) { o.log_jsonl = dir / "run/last.safetensors"; }),
                  "is a checkpoint's name in the run directory");
  EXPECT_SG_ERROR(fit_with([&](TrainerOptions& o) { o.metrics_json = dir / "run"; }), "is --out");
  EXPECT_SG_ERROR(fit_with([&](TrainerOptions& o) { o.metrics_json = o.log_jsonl = dir / "m"; }),
                  "--log-jsonl " + (dir / "m") + " is also --metrics-json");
  EXPECT_SG_ERROR(fit_with([&](TrainerOptions& o) { o.log_jsonl = data + "/x.jsonl"; }),
                  "--log-jsonl: cannot create the directory of");
  EXPECT_SG_ERROR(fit_with([&](TrainerOptions& o) { o.log_jsonl = dir.path().string(); }),
                  "--log-jsonl: cannot append to " + dir.path().string() + ": it is a directory");
  EXPECT_FALSE(fs::exists(dir / "run"));  // each refused before the run started
  std::ifstream in(data);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "the task's data\n");
  // Stopped at step 12 after its evaluation at 10 and killed: the log's line of a later step (as
  // a killed run leaves it, with half a line after it) goes on --resume, and no line repeats.
  const std::string log = dir / "logs/run.jsonl";
  fit_with([&](TrainerOptions& o) { o.stop_after = 12, o.log_jsonl = log; });
  std::ofstream(log, std::ios::app) << "{\"step\": 20, \"loss\": 1}\n{\"step\": 2";
  fit_with([&](TrainerOptions& o) { o.log_jsonl = log; }, /*resume=*/true);
  std::ifstream lines(log);
  std::vector<int64_t> steps;
  for (std::string line; std::getline(lines, line);)
    steps.push_back(nlohmann::json::parse(line).at("step"));
  EXPECT_EQ(steps, (std::vector<int64_t>{10, 20, 30}));
  // Other contents under the same name: the resume is refused, naming the flag.
  std::ofstream(data) << "other data\n";
  EXPECT_SG_ERROR(fit_with([](TrainerOptions&) {}, /*resume=*/true),
                  "--resume: --data " + data + " is not the file the run was trained on");
}

TEST(TrainLoop, BadOptionsAndAClashingTaskAreClearErrors) {
  TempDir dir;
  const auto with = [&](auto change) {
    TrainerOptions o = options_in(dir / "x");
    change(o);
    return o;
  };
  EXPECT_SG_ERROR(with([](TrainerOptions& o) { o.steps = 0; }).validate(),
                  "--steps must be at least 1, got 0");
  EXPECT_SG_ERROR(with([](TrainerOptions& o) { o.eval_every = 0; }).validate(),
                  "--eval-every must be at least 1");
  EXPECT_SG_ERROR(with([](TrainerOptions& o) { o.sync_every = 0; }).validate(),
                  "--sync-every must be at least 1");
  EXPECT_SG_ERROR(
      with([](TrainerOptions& o) { o.average_last = 2; }).validate(),
      "--average-last 2 needs step checkpoints to average: --checkpoint-every must be positive");
  EXPECT_SG_ERROR(with([](TrainerOptions& o) { o.ema_decay = 1; }).validate(),
                  "--ema must be a decay in (0, 1) (or 0: no moving average), got 1");
  EXPECT_SG_ERROR(with([](TrainerOptions& o) { o.resume = o.overwrite = true; }).validate(),
                  "--resume and --overwrite exclude each other");
  EXPECT_SG_ERROR(with([](TrainerOptions& o) { o.monitor = ""; }).validate(), "no monitor");
  EXPECT_SG_ERROR(Training(with([](TrainerOptions& o) { o.monitor = "accuracy"; })).fit(),
                  "the evaluation has no metric 'accuracy' (the monitor)");
  Training clash(with([&](TrainerOptions& o) { o.out_dir = dir / "clash"; }));
  clash.task->extra_key = "step";
  EXPECT_SG_ERROR(clash.fit(), "the task's checkpoint metadata has 'step', a key the loop writes");
  Training rowless(with([&](TrainerOptions& o) { o.out_dir = dir / "rowless"; }));
  rowless.task->rowless_batch = true;
  EXPECT_SG_ERROR(rowless.fit(), "the training batch's 'x' has no rows");
  EXPECT_SG_ERROR(
      with([](TrainerOptions& o) { o.cuda_graph = true, o.ema_decay = 0.9; }).validate(),
      "--cuda-graph with a moving average (--ema) is not supported");
  EXPECT_SG_ERROR(Training(with([](TrainerOptions& o) { o.cuda_graph = true; })).fit(),
                  "GraphedStep: a CUDA graph needs the model on a CUDA device, not cpu");
}

// TrainerOptions::deterministic (Lightning's Trainer(deterministic=True)): every step of the run
// in deterministic mode, and the process's setting as it was afterwards.
TEST(TrainLoop, DeterministicRunsEveryStepInDeterministicModeAndRestoresTheSetting) {
  TempDir dir;
  TrainerOptions o = options_in(dir / "run");
  o.deterministic = true;
  ASSERT_FALSE(are_deterministic_algorithms_enabled());
  Training run(o);
  run.fit();
  EXPECT_EQ(run.task->deterministic_steps, o.steps);
  EXPECT_FALSE(are_deterministic_algorithms_enabled());
  Training plain(options_in(dir / "plain"));
  plain.fit();
  EXPECT_EQ(plain.task->deterministic_steps, 0) << "off: the process's setting, here off";
}

TEST(TrainLoop, OnAGpuTheStepAsACudaGraphGivesTheEagerSteps) {
  if (!cuda_available()) GTEST_SKIP() << cuda_unavailable_reason();
  // The same run eagerly and as one graph replayed (dropout's masks drawn as an eager step draws
  // them): the same losses, evaluations and best step. The weights are compared by their losses:
  // the few bits a GPU's summation order may change are not what this test is about.
  TempDir dir;
  TrainerOptions o = options_in(dir / "eager");
  o.sync_every = 5;
  const FitResult eager = Training(o, 0, Device::cuda(0)).fit();
  o.out_dir = dir / "graph", o.cuda_graph = true;
  const FitResult graph = Training(o, 0, Device::cuda(0)).fit();
  ASSERT_EQ(eager.history.losses.size(), graph.history.losses.size());
  for (size_t i = 0; i < eager.history.losses.size(); ++i) {
    EXPECT_NEAR(graph.history.losses[i], eager.history.losses[i],
                1e-5 * std::abs(eager.history.losses[i]))
        << "step " << i + 1;
  }
  EXPECT_EQ(graph.best_step, eager.best_step);
  EXPECT_NEAR(graph.best.at("mse"), eager.best.at("mse"), 1e-4 * eager.best.at("mse"));
}

}  // namespace
}  // namespace sg::train
