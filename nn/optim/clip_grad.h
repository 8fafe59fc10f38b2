// Gradient clipping by global norm (torch.nn.utils.clip_grad_norm_): if the norm of all gradients
// together exceeds max_norm, scale every gradient by max_norm / (norm + 1e-6). One huge gradient
// (a loss spike) then moves the parameters by a bounded step instead of wrecking them.
//
//   loss.backward();
//   sg::Tensor norm = sg::optim::clip_grad_norm_(model.parameters(), /*max_norm=*/1.0);
//   opt.step();
#pragma once

#include <vector>

#include "autograd/autograd.h"

namespace sg::optim {

// Returns the total norm BEFORE clipping, a 0-d tensor (as torch): the p-norm of the vector of
// every gradient element, with norm_type = INFINITY for the largest |g|. Parameters without a
// gradient are skipped; with none at all the norm is 0.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0);

}  // namespace sg::optim
