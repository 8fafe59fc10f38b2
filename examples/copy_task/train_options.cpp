// A training run's options (trainer.h's TrainOptions): their checks, and with --distributed the
// check that every rank was started with the same ones.
#include <fmt/format.h>

#include "train/data_parallel_run.h"
#include "trainer.h"

namespace copy_task {

// What the library's loop does not check itself (sg::train::TrainerOptions::validate): the
// program's device flags and data parallelism.
void TrainOptions::validate() const {
  SG_CHECK(parallel.bucket_mb > 0, "--bucket-mb must be positive, got {}", parallel.bucket_mb);
  SG_CHECK(!zero1 || parallel.distributed,
           "--zero1 shards the optimizer state over the ranks of --distributed; add --distributed "
           "(and run under mpirun)");
  const bool on_cuda = device.rfind("cuda", 0) == 0;
  SG_CHECK(!cuda_graph || on_cuda, "--cuda-graph needs --device cuda (got --device {})", device);
  SG_CHECK(!tf32 || on_cuda, "--tf32 is for float32 products on CUDA (got --device {})", device);
}

void check_same_settings_on_every_rank(const Config& config, const TrainOptions& options) {
  std::vector<std::pair<std::string, std::string>> settings = {{"--preset", config.preset}};
  for (auto& setting : Config(config).schema().flag_values()) settings.push_back(setting);
  auto flag = [](bool on) { return on ? "given" : "not given"; };
  settings.insert(
      settings.end(),
      {{"--out", options.out_dir},
       {"--resume", flag(options.resume)},
       {"--overwrite", flag(options.overwrite)},
       {"--device", options.device},
       {"--sync-every", options.sync_every ? std::to_string(*options.sync_every) : "the default"},
       {"--bucket-mb", fmt::format("{}", options.parallel.bucket_mb)},
       {"--zero1", flag(options.zero1)},
       {"--bf16", flag(options.bf16)},
       {"--deterministic", flag(options.deterministic)}});
  sg::train::check_same_settings_on_every_rank(std::move(settings), "copy_task train");
}

}  // namespace copy_task
