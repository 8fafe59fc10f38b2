#include "autograd/backend/cuda/cublas_api.h"

#include <dlfcn.h>

#include <string>

#include "autograd/error.h"

namespace sg::cuda {

namespace {

// The soname of the cuBLAS this was compiled against: its major version must match the headers.
const std::string kLibrary = fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR);

template <typename F>
void resolve(void* library, const char* name, F& function) {
  void* symbol = dlsym(library, name);
  SG_CHECK(symbol != nullptr, "cuda: {} has no function {}: {}", kLibrary, name, dlerror());
  function = reinterpret_cast<F>(symbol);
}

CublasApi load() {
  void* library = dlopen(kLibrary.c_str(), RTLD_NOW | RTLD_LOCAL);
  SG_CHECK(library != nullptr,
           "cuda: cannot load {} (cuBLAS, needed for matrix products on the GPU): {}; install the "
           "CUDA toolkit's cuBLAS or put its lib64 folder on LD_LIBRARY_PATH",
           kLibrary, dlerror());
  // Never closed: handles made by it live until the program ends.
  CublasApi api;
  resolve(library, "cublasCreate_v2", api.create);
  resolve(library, "cublasSetStream_v2", api.set_stream);
  resolve(library, "cublasSetWorkspace_v2", api.set_workspace);
  resolve(library, "cublasSetMathMode", api.set_math_mode);
  resolve(library, "cublasSgemmStridedBatched", api.sgemm_strided_batched);
  resolve(library, "cublasDgemmStridedBatched", api.dgemm_strided_batched);
  resolve(library, "cublasGemmStridedBatchedEx", api.gemm_strided_batched_ex);
  resolve(library, "cublasGetStatusString", api.get_status_string);
  return api;
}

}  // namespace

const CublasApi& cublas_api() {
  static const CublasApi api = load();  // a throw leaves it unset: the next call tries again
  return api;
}

}  // namespace sg::cuda
