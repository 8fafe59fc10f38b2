// What the CPU reductions share (reduce.cpp, both backends): the type a sum accumulates in, and a
// NaN test that compiles for integers too. The elementwise ops' math is elementwise_math.h.
#pragma once

#include <cstdint>
#include <type_traits>

#include "autograd/backend/elementwise_math.h"

namespace sg::cpu {

using elementwise::is_nan;

// Float sums accumulate in double, integer sums in int64 (docs/design.md).
template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

}  // namespace sg::cpu
