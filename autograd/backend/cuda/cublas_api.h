// cuBLAS, loaded when the first matrix product runs on a GPU instead of linked into every
// program.
//
//   const CublasApi& api = cublas_api();   // dlopen("libcublas.so.13") once; throws if missing
//   SG_CUBLAS_CHECK(api.sgemm_strided_batched(handle, ...));
//
// Why: libcublas pulls in libcublasLt, 540 MB of GPU kernels, and the dynamic loader's work on
// it at program start (relocations) left ~150 MiB resident in every process linked with it,
// even one that never touches a GPU: a CPU training run of the tiny copy-task model went from
// 16 to 166 MiB. Loaded on first use, a CPU-only run pays nothing, and a CUDA build also runs
// on a machine that has the CUDA runtime but no cuBLAS, until a GPU product is asked for.
#pragma once

#include <cublas_v2.h>

namespace sg::cuda {

// cublasGemmStridedBatchedEx: named by its type, because C++ overloads it (a deprecated form takes
// the compute type as a cudaDataType).
using GemmStridedBatchedEx = cublasStatus_t (*)(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA,
    const void* B, cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo);

// The cuBLAS functions the backend calls, with the signatures of cublas_v2.h.
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;  // TF32 for float32 products
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
  decltype(&cublasDgemmStridedBatched) dgemm_strided_batched = nullptr;
  GemmStridedBatchedEx gemm_strided_batched_ex = nullptr;  // bfloat16 products
  decltype(&cublasGetStatusString) get_status_string = nullptr;
};

// Loads the library on the first call (thread-safe); throws sg::Error naming the library and
// the loader's message when it or one of the functions cannot be found.
const CublasApi& cublas_api();

}  // namespace sg::cuda
