#include "distributed_training.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if SG_COPY_TASK_DISTRIBUTED
#include "autograd/cpu_kernels.h"
#include "distributed/same_settings.h"
#include "distributed/zero_redundancy_optimizer.h"
#endif

namespace copy_task {

namespace {

constexpr uint64_t kDropoutStream = 0x5000;  // trainer.cpp's streams are 0x1000 to 0x4000

// The seed of rank `rank`'s dropout stream: a fresh run starts epoch 0; a resumed run that cannot
// continue the saved streams starts new ones at epoch = its step.
uint64_t rank_seed(uint64_t seed, int rank, int64_t epoch) {
  const uint64_t run = sg::random_u64_at(seed ^ kDropoutStream, static_cast<uint64_t>(epoch) + 1);
  return sg::random_u64_at(run, static_cast<uint64_t>(rank) + 1);
}

// Bytes of the per-parameter state tensors an optimizer holds (not its step counts and lrs).
int64_t state_bytes_of(const sg::optim::Optimizer& optimizer) {
#if SG_COPY_TASK_DISTRIBUTED
  if (auto* zero = dynamic_cast<const sg::distributed::ZeroRedundancyOptimizer*>(&optimizer))
    return zero->state_bytes();
#endif
  int64_t bytes = 0;
  for (const auto& [name, t] : optimizer.state()) {
    if (name != "step" && name != "lr" && name.rfind("step.", 0) != 0)
      bytes += t.numel() * static_cast<int64_t>(sg::dtype_size(t.dtype()));
  }
  return bytes;
}

}  // namespace

DataParallelRun::DataParallelRun(const std::shared_ptr<sg::nn::Module>& model, const Config& config,
                                 const TrainOptions& options) {
  if (!options.distributed) return;
#if SG_COPY_TASK_DISTRIBUTED
  join_distributed_job();
  group_ = sg::distributed::default_group();
  SG_CHECK(config.batch % group_->world_size() == 0,
           "--distributed: the batch of {} does not split evenly over {} ranks", config.batch,
           group_->world_size());
  const auto cap = static_cast<int64_t>(options.bucket_mb * 1024 * 1024);
  ddp_ = std::make_unique<sg::nn::DistributedDataParallel>(
      model, group_,
      sg::nn::DistributedDataParallelOptions{.bucket_cap_bytes = std::max<int64_t>(cap, 1)});
#else
  (void)model, (void)config;
  SG_FAIL(
      "--distributed: this build has no MPI (apt-get install libopenmpi-dev openmpi-bin, "
      "then configure again)");
#endif
}

int DataParallelRun::rank() const {
#if SG_COPY_TASK_DISTRIBUTED
  if (group_) return group_->rank();
#endif
  return 0;
}

int DataParallelRun::world_size() const {
#if SG_COPY_TASK_DISTRIBUTED
  if (group_) return group_->world_size();
#endif
  return 1;
}

Batch DataParallelRun::my_rows(const Batch& global) const {
  const int n = world_size();
  if (n == 1) return global;
  const int64_t rows = global.src.size(0) / n, start = rank() * rows;
  return {global.src.narrow(0, start, rows).contiguous(),
          global.tgt.narrow(0, start, rows).contiguous(),
          global.lengths.narrow(0, start, rows).contiguous()};
}

sg::Tensor DataParallelRun::per_token_mean(const sg::Tensor& loss_sum, int64_t tokens) const {
#if SG_COPY_TASK_DISTRIBUTED
  if (ddp_) return ddp_->global_mean_loss(loss_sum, tokens);
#endif
  return loss_sum / static_cast<double>(std::max<int64_t>(tokens, 1));
}

std::string DataParallelRun::start_dropout_streams(const Config& config, const RunState& state,
                                                   bool resumed) {
  const int ranks = world_size();
  if (ranks == 1) {
    if (resumed) sg::default_generator().set_state(state.global_rng);
    return "";
  }
  if (resumed && state.rank_rngs.size() == static_cast<size_t>(ranks)) {
    sg::default_generator().set_state(state.rank_rngs[static_cast<size_t>(rank())]);
    return "";
  }
  sg::default_generator().manual_seed(rank_seed(config.seed, rank(), resumed ? state.step : 0));
  if (!resumed || config.dropout == 0) return "";
  return fmt::format(
      "note: the checkpoint holds the dropout streams of {} rank{}, this run has {}: each rank's "
      "dropout starts a new stream at step {} (training goes on, but does not repeat an "
      "uninterrupted run bit for bit)",
      std::max<size_t>(state.rank_rngs.size(), 1), state.rank_rngs.size() > 1 ? "s" : "", ranks,
      state.step);
}

void DataParallelRun::save_dropout_streams(RunState& state) const {
  state.global_rng = sg::default_generator().state();
  state.rank_rngs.clear();
#if SG_COPY_TASK_DISTRIBUTED
  if (world_size() > 1) {
    sg::Tensor mine = sg::zeros({1}, sg::kInt64);
    std::memcpy(mine.raw_data(), &state.global_rng, sizeof(uint64_t));  // the bits, as int64
    sg::Tensor all = sg::zeros({world_size()}, sg::kInt64);
    group_->all_gather_into(all, mine);
    state.rank_rngs.resize(static_cast<size_t>(world_size()));
    std::memcpy(state.rank_rngs.data(), all.raw_data(), state.rank_rngs.size() * sizeof(uint64_t));
  }
#endif
}

void DataParallelRun::gather_optimizer_state(sg::optim::Optimizer& optimizer) const {
#if SG_COPY_TASK_DISTRIBUTED
  if (auto* zero = dynamic_cast<sg::distributed::ZeroRedundancyOptimizer*>(&optimizer))
    zero->consolidate_state(0);
#else
  (void)optimizer;
#endif
}

std::vector<int64_t> DataParallelRun::optimizer_state_bytes(
    const sg::optim::Optimizer& optimizer) const {
  const int64_t mine = state_bytes_of(optimizer);
#if SG_COPY_TASK_DISTRIBUTED
  if (group_ && world_size() > 1) {
    sg::Tensor all = sg::zeros({world_size()}, sg::kInt64);
    group_->all_gather_into(all, sg::full({1}, static_cast<double>(mine), sg::kInt64));
    return all.to_vector<int64_t>();
  }
#endif
  return {mine};
}

int64_t DataParallelRun::gradient_bytes() const {
#if SG_COPY_TASK_DISTRIBUTED
  if (ddp_) return ddp_->gradient_bytes();
#endif
  return 0;
}

void DataParallelRun::finish_gradient_sync() {
#if SG_COPY_TASK_DISTRIBUTED
  if (ddp_) ddp_->finish_gradient_sync();
#endif
}

sg::Tensor DataParallelRun::mean_over_ranks(const sg::Tensor& t) const {
#if SG_COPY_TASK_DISTRIBUTED
  if (group_ && group_->world_size() > 1) {
    sg::Tensor mean = t.contiguous().clone();
    group_->all_reduce(mean, sg::distributed::ReduceOp::Average);
    return mean;
  }
#endif
  return t;
}

std::unique_ptr<sg::optim::Optimizer> make_optimizer(const std::vector<sg::Tensor>& params,
                                                     const Config& config,
                                                     const TrainOptions& options) {
  const sg::optim::AdamOptions adam{
      .lr = 1.0, .betas = {config.beta1, config.beta2}, .eps = config.eps};
  if (!options.zero1) return std::make_unique<sg::optim::Adam>(params, adam);
#if SG_COPY_TASK_DISTRIBUTED
  return std::make_unique<sg::distributed::ZeroRedundancyOptimizer>(
      params, sg::distributed::default_group(), [adam](std::vector<sg::Tensor> shard) {
        return std::make_unique<sg::optim::Adam>(std::move(shard), adam);
      });
#else
  SG_FAIL(
      "--zero1: this build has no MPI (apt-get install libopenmpi-dev openmpi-bin, then "
      "configure again)");
#endif
}

void check_same_settings_on_every_rank(const Config& config, const TrainOptions& options) {
#if SG_COPY_TASK_DISTRIBUTED
  const auto values = config.to_map();
  sg::distributed::Settings settings = {{"--preset", config.preset}};
  for (const sg::train::ConfigField& field : Config::fields())
    settings.emplace_back(field.flag, values.at(field.key));
  auto flag = [](bool on) { return on ? "given" : "not given"; };
  settings.insert(
      settings.end(),
      {{"--out", options.out_dir},
       {"--resume", flag(options.resume)},
       {"--overwrite", flag(options.overwrite)},
       {"--device", options.device},
       {"--sync-every", options.sync_every ? std::to_string(*options.sync_every) : "the default"},
       {"--bucket-mb", fmt::format("{}", options.bucket_mb)},
       {"--zero1", flag(options.zero1)},
       {"--bf16", flag(options.bf16)},
       // --kernels or SCRATCHGRAD_KERNELS: the same model on other kernels is another sum order.
       {"--kernels", std::string(sg::cpu_kernels_name(sg::cpu_kernels()))}});
  sg::distributed::check_same_settings(*sg::distributed::default_group(), settings,
                                       "copy_task train");
#else
  (void)config, (void)options;
#endif
}

bool failed_alike_on_every_rank(const std::exception& error) {
#if SG_COPY_TASK_DISTRIBUTED
  return dynamic_cast<const sg::distributed::RanksDisagree*>(&error) != nullptr;
#else
  (void)error;
  return false;
#endif
}

void join_distributed_job() {
#if SG_COPY_TASK_DISTRIBUTED
  sg::distributed::init_process_group();
#else
  SG_FAIL(
      "--distributed: this build has no MPI (apt-get install libopenmpi-dev openmpi-bin, "
      "then configure again)");
#endif
}

int distributed_rank() {
#if SG_COPY_TASK_DISTRIBUTED
  if (sg::distributed::is_initialized()) return sg::distributed::default_group()->rank();
#endif
  return 0;
}

int distributed_world_size() {
#if SG_COPY_TASK_DISTRIBUTED
  if (sg::distributed::is_initialized()) return sg::distributed::default_group()->world_size();
#endif
  return 1;
}

int distributed_local_rank() {
  join_distributed_job();
#if SG_COPY_TASK_DISTRIBUTED
  return sg::distributed::default_group()->local_rank();
#else
  return 0;
#endif
}

void abort_distributed_job(int exit_code) {
#if SG_COPY_TASK_DISTRIBUTED
  sg::distributed::abort_job(exit_code);
#else
  std::_Exit(exit_code);
#endif
}

}  // namespace copy_task
