# Third-party dependencies, all from Debian packages (see docs/design.md for why each one is here).
find_package(fmt REQUIRED)

# OpenBLAS: the CPU gemm, as the imported target scratchgrad_openblas. The same file is installed
# with the package config, which must recreate the target (see ScratchgradOpenBLAS.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/ScratchgradOpenBLAS.cmake)
if(NOT SCRATCHGRAD_OPENBLAS_FOUND)
  message(FATAL_ERROR "OpenBLAS not found (libopenblas.so and cblas.h); on Debian: apt-get install libopenblas-dev")
endif()
