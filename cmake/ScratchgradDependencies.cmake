# Third-party dependencies, all from Debian packages (see docs/design.md for why each one is here).
find_package(fmt REQUIRED)

# Which C++ standard library the compiler uses. Debian's libfmt and GoogleTest libraries are built
# against GCC's libstdc++; a build with Clang's libc++ (-stdlib=libc++, as on macOS) cannot link
# them (std::string is another type there), so it takes fmt as headers only and builds GoogleTest
# from the source Debian ships with it (tests/CMakeLists.txt).
include(CheckCXXSourceCompiles)
check_cxx_source_compiles("#include <version>
#ifndef _LIBCPP_VERSION
#error not libc++
#endif
int main() { return 0; }" SCRATCHGRAD_WITH_LIBCXX)
set(SCRATCHGRAD_FMT_TARGET fmt::fmt)
if(SCRATCHGRAD_WITH_LIBCXX AND NOT APPLE)
  set(SCRATCHGRAD_FMT_TARGET fmt::fmt-header-only)
  message(STATUS "scratchgrad: libc++: fmt as headers only, GoogleTest built from source")
endif()

# BLAS: the CPU gemm, as the imported target scratchgrad_blas (OpenBLAS unless SCRATCHGRAD_BLAS
# says otherwise). The same file is installed with the package config, which must recreate the
# target (see ScratchgradBLAS.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/ScratchgradBLAS.cmake)
if(NOT SCRATCHGRAD_BLAS_FOUND)
  message(FATAL_ERROR "BLAS '${SCRATCHGRAD_BLAS}' not found (its library and CBLAS header); "
                      "${SCRATCHGRAD_BLAS_HINT}")
endif()
message(STATUS "scratchgrad: BLAS ${SCRATCHGRAD_BLAS} (${SCRATCHGRAD_BLAS_LIBRARY})")

# tcmalloc: the malloc of programs that link scratchgrad (see ScratchgradTcmalloc.cmake). Off with
# sanitizers, which bring their own malloc; without the library, glibc's malloc, and a warning.
set(SCRATCHGRAD_USE_TCMALLOC OFF)
if(SCRATCHGRAD_TCMALLOC AND SCRATCHGRAD_SANITIZE)
  message(STATUS "scratchgrad: sanitizers replace malloc; tcmalloc is not linked")
elseif(SCRATCHGRAD_TCMALLOC)
  include(${CMAKE_CURRENT_LIST_DIR}/ScratchgradTcmalloc.cmake)
  if(SCRATCHGRAD_TCMALLOC_FOUND)
    set(SCRATCHGRAD_USE_TCMALLOC ON)
    message(STATUS "scratchgrad: malloc from ${SCRATCHGRAD_TCMALLOC_LIBRARY}")
  else()
    message(WARNING "tcmalloc_minimal not found: programs use glibc's malloc, and small ops are "
                    "~10% slower (on Debian: apt-get install libtcmalloc-minimal4, or "
                    "-DSCRATCHGRAD_TCMALLOC=OFF to silence this)")
  endif()
endif()

# MPI (Open MPI on Debian: libopenmpi-dev openmpi-bin): the transport of scratchgrad::distributed,
# which is built when MPI is found. Only the C API is used (MPI_CXX_SKIP_MPICXX: no C++ bindings).
set(MPI_CXX_SKIP_MPICXX ON)
find_package(MPI COMPONENTS CXX)
option(SCRATCHGRAD_DISTRIBUTED "Build scratchgrad::distributed (needs MPI)" ${MPI_CXX_FOUND})
if(SCRATCHGRAD_DISTRIBUTED AND NOT MPI_CXX_FOUND)
  message(FATAL_ERROR "SCRATCHGRAD_DISTRIBUTED=ON but MPI was not found; on Debian: apt-get "
                      "install libopenmpi-dev openmpi-bin")
endif()
if(NOT SCRATCHGRAD_DISTRIBUTED)
  message(STATUS "scratchgrad: no MPI, so no scratchgrad::distributed (apt-get install "
                 "libopenmpi-dev openmpi-bin)")
endif()
