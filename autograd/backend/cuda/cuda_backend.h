// The CUDA backend's entry point, used only by backend_for() in autograd/backend/backend.cpp.
#pragma once

#include "autograd/backend/backend.h"

namespace sg {

// The backend for CUDA device `index`; throws when no usable GPU answers.
Backend& cuda_backend(int index);

}  // namespace sg
