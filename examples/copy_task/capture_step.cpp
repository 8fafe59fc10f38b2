#include "capture_step.h"

#include <cmath>
#include <cstdlib>

#include "nn/activation_capture.h"
#include "tasks.h"
#include "train/output_paths.h"
#include "trainer.h"

namespace copy_task {

namespace {

using sg::Tensor;

// ---- planted bugs: only for the finder's own tests (tests/copy_task/find_divergence_test.sh) ----

enum class PlantedBug { None, EmbeddingScale, LayerNormEps, CausalMask };

PlantedBug planted_bug() {
  const char* value = std::getenv(kPlantedBugVariable);
  const std::string name = value == nullptr ? "" : value;
  if (name.empty()) return PlantedBug::None;
  if (name == "embedding-scale") return PlantedBug::EmbeddingScale;
  if (name == "layer-norm-eps") return PlantedBug::LayerNormEps;
  if (name == "causal-mask") return PlantedBug::CausalMask;
  SG_FAIL("{}={}: unknown planted bug (expected embedding-scale, layer-norm-eps or causal-mask)",
          kPlantedBugVariable, name);
}

void plant_in_model(PlantedBug bug, sg::nn::Transformer& model) {
  sg::NoGradGuard no_grad;
  if (bug == PlantedBug::EmbeddingScale) {
    const double unscale = 1.0 / std::sqrt(static_cast<double>(model.options().d_model));
    model.src_embed->weight.mul_(unscale);
    model.tgt_embed->weight.mul_(unscale);
  }
  if (bug == PlantedBug::LayerNormEps) {
    for (const auto& [name, module] : model.named_modules()) {
      if (auto norm = std::dynamic_pointer_cast<sg::nn::LayerNorm>(module)) norm->eps = 1e-3;
    }
  }
}

// Transformer::target_mask with key <= query + 1 instead of key <= query.
Tensor causal_mask_off_by_one(const sg::nn::Transformer& model, const Tensor& tgt) {
  const int64_t T = tgt.size(1);
  const sg::TensorOptions options = sg::TensorOptions(sg::kInt64).device(tgt.device());
  Tensor query = sg::arange(static_cast<double>(T), options).view({T, 1});
  Tensor key = sg::arange(static_cast<double>(T), options).view({1, T});
  Tensor causal = (key <= query + 1.0).view({1, 1, T, T});
  return sg::logical_and(sg::nn::make_padding_mask(tgt, model.options().pad_idx), causal);
}

}  // namespace

void check_capture_outputs(const CaptureOptions& options) {
  const std::vector<sg::train::NamedPath> kept = {{"--checkpoint", options.checkpoint}};
  sg::train::check_replaced_output({"--out", options.out}, kept);
  sg::train::check_replaced_output({"--batch-out", options.batch_out}, kept);
  sg::train::check_outputs({{"--out", options.out}, {"--batch-out", options.batch_out}}, {});
}

std::string capture_step(const CaptureOptions& options) {
  SG_CHECK(options.batch >= 1, "capture: --batch must be at least 1, got {}", options.batch);
  check_capture_outputs(options);
  const PlantedBug bug = planted_bug();
  LoadedModel loaded = load_checkpoint(options.checkpoint);
  const Config& config = loaded.config;
  sg::nn::Transformer& model = *loaded.model;
  model.to(sg::kFloat64);
  model.eval();
  plant_in_model(bug, model);

  TaskGenerator generator(config.task_kind(), config.vocab, config.min_len, config.length,
                          options.seed);
  const Batch batch = generator.next(options.batch);
  if (!options.batch_out.empty()) {
    sg::nn::save_safetensors(options.batch_out, {{"src", batch.src}, {"tgt", batch.tgt}},
                             {{"written_by", "copy_task capture"}});
  }

  // The training step of trainer.cpp (teacher forcing), with the masks made here, as
  // Transformer::forward makes them, so that a test can plant a wrong one.
  sg::nn::ActivationCapture capture(model);
  const int64_t L = batch.tgt.size(1);
  Tensor decoder_in = batch.tgt.narrow(1, 0, L - 1);
  Tensor labels = batch.tgt.narrow(1, 1, L - 1).contiguous();
  Tensor src_mask = model.source_mask(batch.src);
  Tensor tgt_mask = bug == PlantedBug::CausalMask ? causal_mask_off_by_one(model, decoder_in)
                                                  : model.target_mask(decoder_in);
  Tensor memory = model.encode(batch.src, src_mask);
  Tensor logits = model.decode(decoder_in, memory, src_mask, tgt_mask);
  Tensor loss = sg::nn::cross_entropy(logits.reshape({-1, config.vocab}), labels.reshape({-1}),
                                      kPad, config.label_smoothing);
  capture.backward(loss);
  capture.save(options.out, {{"written_by", "scratchgrad copy_task capture"}});
  return fmt::format(
      "captured {} module outputs, their gradients and {} parameter gradients of "
      "one step (batch {}, loss {:.6f}) into {}",
      capture.records().size(), model.named_parameters().size(), options.batch, loss.item<double>(),
      options.out);
}

}  // namespace copy_task
