# Sourced by the other scripts: the environment every build and run shares.
# nvcc lives in /usr/local/cuda/bin, often not on PATH (CI): put it there so CMake finds it and
# SCRATCHGRAD_CUDA defaults ON, which compiles the CUDA backend even on machines without a GPU.
if [[ -x /usr/local/cuda/bin/nvcc && ":$PATH:" != *":/usr/local/cuda/bin:"* ]]; then
  export PATH="$PATH:/usr/local/cuda/bin"
fi
jobs=$(nproc)  # compile and test jobs: every core (other scripts use $jobs)
