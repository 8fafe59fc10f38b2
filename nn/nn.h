// Umbrella header of scratchgrad::nn.
#pragma once

#include "autograd/autograd.h"
#include "nn/init.h"
