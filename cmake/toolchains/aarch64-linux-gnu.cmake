# Cross-compiling scratchgrad for ARM64 Linux on an x86-64 Debian machine, with Debian's cross
# compiler and the arm64 builds of its libraries (scripts/cross_arm64.sh installs both):
#   cmake -S . -B build-arm64 -G Ninja --toolchain cmake/toolchains/aarch64-linux-gnu.cmake
# The programs run under qemu-user: CMAKE_CROSSCOMPILING_EMULATOR makes ctest (and GoogleTest's
# test discovery) start every test binary through qemu-aarch64, which finds the arm64 C library
# of the multiarch packages in /lib/ld-linux-aarch64.so.1.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Debian's multiarch layout: arm64 libraries in /usr/lib/aarch64-linux-gnu, headers shared in
# /usr/include. Find them there, and never an x86-64 library.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# No arm64 MPI is installed for the cross build: never pick up the host's.
set(CMAKE_DISABLE_FIND_PACKAGE_MPI ON)
find_program(SG_QEMU_AARCH64 qemu-aarch64)
if(SG_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${SG_QEMU_AARCH64})
endif()
