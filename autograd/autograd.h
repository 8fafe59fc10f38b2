// Umbrella header of scratchgrad::autograd: tensors, ops, autograd, gradcheck.
#pragma once

#include "autograd/anomaly.h"
#include "autograd/blas.h"
#include "autograd/cpu_kernels.h"
#include "autograd/device.h"
#include "autograd/dtype.h"
#include "autograd/error.h"
#include "autograd/factory.h"
#include "autograd/generator.h"
#include "autograd/grad.h"
#include "autograd/grad_mode.h"
#include "autograd/gradcheck.h"
#include "autograd/graphviz.h"
#include "autograd/node.h"
#include "autograd/ops.h"
#include "autograd/shape.h"
#include "autograd/tensor.h"
