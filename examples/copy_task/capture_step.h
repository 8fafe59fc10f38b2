// copy_task capture: one training step of a copy-task model with every module's output, every
// output's gradient, every parameter's gradient and the loss recorded (sg::nn::ActivationCapture)
// into a safetensors file, and the batch it ran on into another. scripts/capture_torch_step.py
// runs the same step in PyTorch from the same checkpoint and batch; `copy_task compare` then names
// the first module that differs (scripts/find_divergence.sh does all three).
//
//   copy_task capture --checkpoint model.safetensors --batch-out batch.safetensors
//                     --out ours.safetensors
#pragma once

#include <cstdint>
#include <string>

#include "config.h"

namespace copy_task {

struct CaptureOptions {
  std::string checkpoint;  // a model written by train (or save_initial_checkpoint)
  std::string out;         // the capture
  std::string batch_out;   // the batch, {"src", "tgt"} int64 [B, L]: the PyTorch side reads it
  int64_t batch = 8;       // sequences in the batch
  uint64_t seed = 1;       // of the batch's sequences
};

// Neither output may replace the checkpoint, the other output, or any checkpoint at all
// (sg::train::check_replaced_output); capture_step checks first, and capture --init before it
// writes its new model.
void check_capture_outputs(const CaptureOptions& options);

// Runs the step in float64 (tight tolerances: the two sides then differ by rounding only) and
// returns a one-line summary. The model runs in eval mode: dropout off, since two implementations
// cannot draw the same random masks; nothing else in it behaves differently in training.
std::string capture_step(const CaptureOptions& options);

// Planted bugs, for testing the finder itself: SCRATCHGRAD_PLANTED_BUG set to
//   embedding-scale   the embeddings are not scaled by sqrt(d_model) (emulated: their weights are
//                     divided by it, which every module after the embedding cannot tell apart)
//   layer-norm-eps    every LayerNorm uses eps 1e-3 instead of 1e-5
//   causal-mask       the decoder's causal mask is off by one: query t also sees key t + 1
// makes capture_step compute that wrong model. Unset (the default), nothing changes.
inline constexpr const char* kPlantedBugVariable = "SCRATCHGRAD_PLANTED_BUG";

}  // namespace copy_task
