# Sourced by the other scripts: the environment every build and run shares.
# nvcc lives in /usr/local/cuda/bin, often not on PATH (CI): put it there so CMake finds it and
# SCRATCHGRAD_CUDA defaults ON, which compiles the CUDA backend even on machines without a GPU.
if [[ -x /usr/local/cuda/bin/nvcc && ":$PATH:" != *":/usr/local/cuda/bin:"* ]]; then
  export PATH="$PATH:/usr/local/cuda/bin"
fi
# compile and test jobs: every core (other scripts use $jobs); nproc is GNU's, getconf everyone's
jobs=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)

# build_example TARGET: builds one target in $BUILD_DIR (default build), keeping the options of an
# existing build or configuring a Release one, and sets build_dir for the caller.
build_example() {
  build_dir=${BUILD_DIR:-build}
  if [[ -f $build_dir/CMakeCache.txt ]]; then
    cmake -S . -B "$build_dir" >/dev/null  # keep the options of the existing build
  else
    cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
  fi
  cmake --build "$build_dir" --parallel "$jobs" --target "$1"
}
