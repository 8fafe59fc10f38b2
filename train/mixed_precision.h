// The --bf16 flag of the training programs: the forward and the loss under sg::AutocastGuard
// (autograd/autocast.h), and a note for a user whose machine will not run it faster than float32.
//
//   std::string note = sg::train::bfloat16_speed_note(device);
//   if (!note.empty()) fmt::print(stderr, "{}\n", note);
//   ...
//   { sg::AutocastGuard autocast(sg::kBFloat16, bf16); loss = loss_of(model(batch)); }
#pragma once

#include <string>

#include "autograd/device.h"
#include "nn/safetensors.h"

namespace sg::train {

// "" where autocast's bfloat16 products run on their fast kernel (a CPU with AVX512-BF16 under
// the fast kernels, or a GPU), else one line saying why they will be slower than float32 there
// (they stay correct: the reference kernel rounds the inputs and runs the float32 product). A GPU
// without bfloat16 tensor cores is refused at the first product, with its reason.
std::string bfloat16_speed_note(Device device);

// A run's precision as its checkpoints keep it ("precision" metadata): "bfloat16 autocast" with
// --bf16, else "float32".
std::string precision_name(bool bf16);
// On --resume: a run continues in the precision it was trained in (the steps so far were taken in
// it; switching halfway would make the resumed run differ from an uninterrupted one). An error
// naming the file and both precisions when `saved` (the checkpoint's metadata) says otherwise; a
// checkpoint without the entry (written before it existed) is accepted.
void check_same_precision(const nn::Metadata& saved, bool bf16, const std::string& path);

}  // namespace sg::train
