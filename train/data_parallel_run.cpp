#include "train/data_parallel_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <utility>

#include "autograd/cpu_kernels.h"
#include "autograd/error.h"
#include "autograd/factory.h"
#include "autograd/generator.h"
#include "train/numbers.h"

#if SG_TRAIN_DISTRIBUTED
#include "distributed/data_parallel.h"
#include "distributed/process_group.h"
#include "distributed/same_settings.h"
#include "distributed/zero_redundancy_optimizer.h"
#endif

namespace sg::train {

namespace {

constexpr uint64_t kDropoutStream = 0x5000;  // a stream of its own beside a task's data streams

// The seed of rank `rank`'s dropout stream: a fresh run starts epoch 0; a resumed run that cannot
// continue the saved streams starts new ones at epoch = its step.
uint64_t rank_seed(uint64_t seed, int rank, int64_t epoch) {
  const uint64_t run = random_u64_at(seed ^ kDropoutStream, static_cast<uint64_t>(epoch) + 1);
  return random_u64_at(run, static_cast<uint64_t>(rank) + 1);
}

// Bytes of the per-parameter state tensors an optimizer holds (not its step counts and lrs).
int64_t state_bytes_of(const optim::Optimizer& optimizer) {
#if SG_TRAIN_DISTRIBUTED
  if (auto* zero = dynamic_cast<const distributed::ZeroRedundancyOptimizer*>(&optimizer))
    return zero->state_bytes();
#endif
  int64_t bytes = 0;
  for (const auto& [name, t] : optimizer.state()) {
    if (!optim::Optimizer::is_bookkeeping_entry(name))
      bytes += t.numel() * static_cast<int64_t>(dtype_size(t.dtype()));
  }
  return bytes;
}

#if !SG_TRAIN_DISTRIBUTED
[[noreturn]] void no_mpi(const std::string& what) {
  SG_FAIL(
      "{}: this build has no MPI (apt-get install libopenmpi-dev openmpi-bin, then configure "
      "again)",
      what);
}
#endif

}  // namespace

void write_dropout_streams(nn::Metadata& metadata, const DropoutStreams& streams) {
  metadata["global_rng"] = std::to_string(streams.global);
  if (streams.per_rank.empty()) return;
  std::vector<std::string> states;
  for (uint64_t state : streams.per_rank) states.push_back(std::to_string(state));
  metadata["rank_rngs"] = strings_to_json(states, "rank_rngs");
}

DropoutStreams read_dropout_streams(const MetadataReader& metadata) {
  DropoutStreams streams{.global = metadata.unsigned_integer("global_rng")};
  if (!metadata.has("rank_rngs")) return streams;  // written by runs of several ranks
  for (const std::string& state : metadata.strings("rank_rngs")) {
    streams.per_rank.push_back(parse_number<uint64_t>(
        state, fmt::format("{}: checkpoint metadata 'rank_rngs'", metadata.source()),
        "a generator state in [0, 2^64)"));
  }
  return streams;
}

struct DataParallelRun::Ranks {
#if SG_TRAIN_DISTRIBUTED
  std::shared_ptr<distributed::ProcessGroup> group;
  std::unique_ptr<nn::DistributedDataParallel> ddp;
#endif
};

DataParallelRun::DataParallelRun(const std::shared_ptr<nn::Module>& model,
                                 const DataParallelOptions& options)
    : ranks_(std::make_unique<Ranks>()) {
  if (!options.distributed) return;
  SG_CHECK(options.bucket_mb > 0, "--bucket-mb must be positive, got {}", options.bucket_mb);
#if SG_TRAIN_DISTRIBUTED
  join_distributed_job();
  ranks_->group = distributed::default_group();
  const auto cap = static_cast<int64_t>(options.bucket_mb * 1024 * 1024);
  ranks_->ddp = std::make_unique<nn::DistributedDataParallel>(
      model, ranks_->group,
      nn::DistributedDataParallelOptions{.bucket_cap_bytes = std::max<int64_t>(cap, 1)});
#else
  (void)model;
  no_mpi("--distributed");
#endif
}

DataParallelRun::~DataParallelRun() = default;

int DataParallelRun::rank() const {
#if SG_TRAIN_DISTRIBUTED
  if (ranks_->group) return ranks_->group->rank();
#endif
  return 0;
}

int DataParallelRun::world_size() const {
#if SG_TRAIN_DISTRIBUTED
  if (ranks_->group) return ranks_->group->world_size();
#endif
  return 1;
}

void DataParallelRun::check_splits(int64_t rows, const std::string& flag) const {
  if (rows % world_size() == 0) return;
  throw FailsOnEveryRank(fmt::format("{}: a batch of {} does not split evenly over {} ranks", flag,
                                     rows, world_size()));
}

Tensor DataParallelRun::my_rows(const Tensor& global) const {
  const int n = world_size();
  if (n == 1) return global;
  check_splits(global.size(0), "DataParallelRun::my_rows");
  const int64_t rows = global.size(0) / n;
  return global.narrow(0, rank() * rows, rows).contiguous();
}

Tensor DataParallelRun::per_token_mean(const Tensor& loss_sum, int64_t tokens) const {
#if SG_TRAIN_DISTRIBUTED
  if (ranks_->ddp) return ranks_->ddp->global_mean_loss(loss_sum, tokens);
#endif
  return loss_sum / static_cast<double>(std::max<int64_t>(tokens, 1));
}

void DataParallelRun::finish_gradient_sync() {
#if SG_TRAIN_DISTRIBUTED
  if (ranks_->ddp) ranks_->ddp->finish_gradient_sync();
#endif
}

Tensor DataParallelRun::mean_over_ranks(const Tensor& t) const {
#if SG_TRAIN_DISTRIBUTED
  if (world_size() > 1) {
    Tensor mean = t.contiguous().clone();
    ranks_->group->all_reduce(mean, distributed::ReduceOp::Average);
    return mean;
  }
#endif
  return t;
}

int64_t DataParallelRun::gradient_bytes() const {
#if SG_TRAIN_DISTRIBUTED
  if (ranks_->ddp) return ranks_->ddp->gradient_bytes();
#endif
  return 0;
}

std::string DataParallelRun::start_dropout_streams(uint64_t seed, bool resumed, int64_t step,
                                                   const DropoutStreams& saved, bool has_dropout) {
  const int ranks = world_size();
  // A checkpoint of one rank keeps only `global`; one of several keeps every rank's stream.
  const size_t saved_ranks = std::max<size_t>(saved.per_rank.size(), 1);
  if (resumed && saved_ranks == static_cast<size_t>(ranks)) {
    default_generator().set_state(ranks == 1 ? saved.global
                                             : saved.per_rank[static_cast<size_t>(rank())]);
    return "";
  }
  if (ranks == 1 && !resumed) return "";  // the stream the program's manual_seed started
  default_generator().manual_seed(rank_seed(seed, rank(), resumed ? step : 0));
  if (!resumed || !has_dropout) return "";
  return fmt::format(
      "note: the checkpoint holds the dropout streams of {} rank{}, this run has {}: each rank's "
      "dropout starts a new stream at step {} (training goes on, but does not repeat an "
      "uninterrupted run bit for bit)",
      saved_ranks, saved_ranks > 1 ? "s" : "", ranks, step);
}

DropoutStreams DataParallelRun::dropout_streams() const {
  DropoutStreams streams{.global = default_generator().state()};
#if SG_TRAIN_DISTRIBUTED
  if (world_size() > 1) {
    Tensor mine = zeros({1}, kInt64);
    std::memcpy(mine.raw_data(), &streams.global, sizeof(uint64_t));  // the bits, as int64
    Tensor all = zeros({world_size()}, kInt64);
    ranks_->group->all_gather_into(all, mine);
    streams.per_rank.resize(static_cast<size_t>(world_size()));
    std::memcpy(streams.per_rank.data(), all.raw_data(),
                streams.per_rank.size() * sizeof(uint64_t));
  }
#endif
  return streams;
}

void DataParallelRun::gather_optimizer_state(optim::Optimizer& optimizer) const {
#if SG_TRAIN_DISTRIBUTED
  if (auto* zero = dynamic_cast<distributed::ZeroRedundancyOptimizer*>(&optimizer))
    zero->consolidate_state(0);
#else
  (void)optimizer;
#endif
}

std::vector<int64_t> DataParallelRun::optimizer_state_bytes(
    const optim::Optimizer& optimizer) const {
  const int64_t mine = state_bytes_of(optimizer);
#if SG_TRAIN_DISTRIBUTED
  if (world_size() > 1) {
    Tensor all = zeros({world_size()}, kInt64);
    ranks_->group->all_gather_into(all, full({1}, static_cast<double>(mine), kInt64));
    return all.to_vector<int64_t>();
  }
#endif
  return {mine};
}

std::unique_ptr<optim::Optimizer> make_adam(const std::vector<Tensor>& params,
                                            const optim::AdamOptions& adam, bool zero1) {
  if (!zero1) return std::make_unique<optim::Adam>(params, adam);
#if SG_TRAIN_DISTRIBUTED
  return std::make_unique<distributed::ZeroRedundancyOptimizer>(
      params, distributed::default_group(), [adam](std::vector<Tensor> shard) {
        return std::make_unique<optim::Adam>(std::move(shard), adam);
      });
#else
  no_mpi("--zero1");
#endif
}

void join_distributed_job() {
#if SG_TRAIN_DISTRIBUTED
  distributed::init_process_group();
#else
  no_mpi("--distributed");
#endif
}

namespace {

// The size and rank of the job a launcher started this process in ({1, 0} when none did): what
// Open MPI and the PMI launchers (MPICH, Slurm) put in the environment, known before joining.
std::pair<int, int> launched_size_and_rank() {
  const auto read = [](std::initializer_list<const char*> names, int otherwise) {
    for (const char* name : names) {
      const char* value = std::getenv(name);
      int n = 0;
      if (value != nullptr &&
          std::from_chars(value, value + std::strlen(value), n).ec == std::errc())
        return n;
    }
    return otherwise;
  };
  return {read({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 1),
          read({"OMPI_COMM_WORLD_RANK", "PMI_RANK"}, 0)};
}

}  // namespace

void join_distributed_job_if_asked(const DataParallelOptions& options) {
  if (options.distributed) {
    join_distributed_job();
    return;
  }
  const int size = launched_size_and_rank().first;
  if (size > 1) {
    throw FailsOnEveryRank(fmt::format(
        "mpirun started {} processes, but without --distributed each would train a whole run "
        "alone, into the same --out: add --distributed (or start one process)",
        size));
  }
}

int distributed_rank() {
#if SG_TRAIN_DISTRIBUTED
  if (distributed::is_initialized()) return distributed::default_group()->rank();
#endif
  return 0;
}

int distributed_world_size() {
#if SG_TRAIN_DISTRIBUTED
  if (distributed::is_initialized()) return distributed::default_group()->world_size();
#endif
  return 1;
}

int distributed_local_rank() {
  join_distributed_job();
#if SG_TRAIN_DISTRIBUTED
  return distributed::default_group()->local_rank();
#else
  return 0;
#endif
}

void abort_distributed_job(int exit_code) {
#if SG_TRAIN_DISTRIBUTED
  distributed::abort_job(exit_code);
#else
  std::_Exit(exit_code);
#endif
}

void check_same_settings_on_every_rank(std::vector<std::pair<std::string, std::string>> settings,
                                       const std::string& program) {
#if SG_TRAIN_DISTRIBUTED
  if (!distributed::is_initialized()) return;
  settings.emplace_back("--kernels", std::string(cpu_kernels_name(cpu_kernels())));
  distributed::check_same_settings(*distributed::default_group(), settings, program);
#else
  (void)settings, (void)program;
#endif
}

bool failed_alike_on_every_rank(const std::exception& error) {
  if (dynamic_cast<const FailsOnEveryRank*>(&error) != nullptr) return true;
#if SG_TRAIN_DISTRIBUTED
  return dynamic_cast<const distributed::RanksDisagree*>(&error) != nullptr;
#else
  return false;
#endif
}

int report_error(const std::exception& error, const std::string& program) {
  if (failed_alike_on_every_rank(error)) {
    // Before joining (or without --distributed), the rank the launcher gave this process.
    const int rank =
        distributed_world_size() > 1 ? distributed_rank() : launched_size_and_rank().second;
    if (rank == 0) fmt::print(stderr, "{}: error: {}\n", program, error.what());
    return 1;
  }
  if (distributed_world_size() > 1) {
    fmt::print(stderr, "{}: error on rank {}: {}\n", program, distributed_rank(), error.what());
    abort_distributed_job(1);
  }
  fmt::print(stderr, "{}: error: {}\n", program, error.what());
  return 1;
}

}  // namespace sg::train
