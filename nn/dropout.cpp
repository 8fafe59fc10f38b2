#include "nn/dropout.h"

namespace sg::nn {

Dropout::Dropout(double p_) : UnaryModule("Dropout"), p(p_) {
  SG_CHECK(p >= 0.0 && p <= 1.0, "Dropout: p must be in [0, 1], got {}", p);
}

}  // namespace sg::nn
