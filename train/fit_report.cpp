#include "train/fit_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "train/metadata.h"
#include "train/mixed_precision.h"

namespace sg::train {

std::string fit_summary(const FitResult& r, const TrainingTask& task,
                        const TrainerOptions& options) {
  const std::vector<double>& losses = r.history.losses;
  std::string out =
      fmt::format("trained {} steps in {:.1f} s ({:.1f} ms/step median); loss {:.3f} -> {:.3f}\n",
                  r.steps, r.train_seconds, r.median_ms_per_step,
                  losses.empty() ? 0.0 : losses.front(), losses.empty() ? 0.0 : losses.back());
  if (r.best_step == 0) {
    out += fmt::format("no evaluation yet (one comes every --eval-every {} steps)\n",
                       options.eval_every);
  } else {
    out += fmt::format("best, at step {}{}: {}\n", r.best_step,
                       options.ema_decay > 0 ? " (the moving average)" : "", task.describe(r.best));
  }
  if (!r.averaged_steps.empty()) {
    out += fmt::format("mean of the checkpoints at steps {}: {}\n",
                       fmt::join(r.averaged_steps, ", "), task.describe(r.averaged));
  }
  if (r.world_size > 1) {  // what data parallelism cost: the traffic, and the memory it saved
    std::vector<std::string> per_rank;
    for (int64_t bytes : r.optimizer_state_bytes) {
      per_rank.push_back(fmt::format("{:.2f}", static_cast<double>(bytes) / 1e6));
    }
    out += fmt::format(
        "{} ranks: {:.2f} MB of gradients all-reduced per step; optimizer state per rank: {} MB\n",
        r.world_size, static_cast<double>(r.gradient_bytes) / 1e6, fmt::join(per_rank, ", "));
  }
  return out;
}

nlohmann::json fit_result_json(const FitResult& r, const TrainingTask& task,
                               const TrainerOptions& options) {
  const nn::Metadata metadata = task.checkpoint_metadata();
  const std::vector<double>& losses = r.history.losses;
  nlohmann::json j{
      {"config", MetadataReader(metadata, "the task's metadata").with_prefix("config.")},
      {"steps", r.steps},
      {"world_size", r.world_size},
      {"gradient_bytes_per_step", r.gradient_bytes},
      {"optimizer_state_bytes_per_rank", r.optimizer_state_bytes},
      {"train_seconds", r.train_seconds},
      {"median_ms_per_step", r.median_ms_per_step},
      {"first_loss", losses.empty() ? 0.0 : losses.front()},
      {"final_loss", losses.empty() ? 0.0 : losses.back()},
      {"precision", precision_name(options.bf16)},
      {"evaluated_weights", options.ema_decay > 0 ? "ema" : "trained"},
      {"best_step", r.best_step},
      {"best", r.best},
      {"evals", nlohmann::json::array()}};
  if (!r.averaged_steps.empty()) {
    j["averaged_steps"] = r.averaged_steps;
    j["averaged"] = r.averaged;
  }
  const History& h = r.history;
  for (size_t i = 0; i < h.eval_steps.size(); ++i) {
    nlohmann::json e{{"step", static_cast<int64_t>(h.eval_steps[i])}};
    for (const auto& [name, values] : h.evals) e[name] = values[i];
    j["evals"].push_back(e);
  }
  return j;
}

}  // namespace sg::train
