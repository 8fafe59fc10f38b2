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

namespace sg::train {

// "" where autocast's bfloat16 products run on their fast kernel (a CPU with AVX512-BF16 under
// the fast kernels, or a GPU), else one line saying why they will be slower than float32 there
// (they stay correct: the reference kernel rounds the inputs and runs the float32 product). A GPU
// without bfloat16 tensor cores is refused at the first product, with its reason.
std::string bfloat16_speed_note(Device device);

}  // namespace sg::train
