// The main of every test binary: fast OpenBLAS kernels first (autograd/blas.h), then GoogleTest.
#include <gtest/gtest.h>

#include "autograd/blas.h"

int main(int argc, char** argv) {
  sg::ensure_fast_blas(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
