// cuda/blas.cu — row-major batched GEMM on cuBLAS (strided batched), with TF32 off by default;
// bfloat16 and float16 through cublasGemmStridedBatchedEx with float32 compute.
// cuBLAS is column-major: a row-major C (M, N) is a column-major Cᵀ (N, M), and Cᵀ = op(B)ᵀ·op(A)ᵀ,
// so the call swaps A and B and M and N; the transpose flags and leading dimensions carry over.
#include "cuda/check.cuh"

#include <atomic>

namespace tg::cuda {

namespace {
std::atomic<bool> g_tf32{false};
}
void set_allow_tf32(bool on) { g_tf32 = on; }
bool allow_tf32() { return g_tf32; }

void gemm(DT dt, bool transA, bool transB, int64_t M, int64_t N, int64_t K, double alpha,
          const void* A, int64_t lda, int64_t strideA, const void* B, int64_t ldb, int64_t strideB,
          double beta, void* C, int64_t ldc, int64_t strideC, int64_t batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  cublasHandle_t h = detail::cublas_handle();
  const cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;  // first cuBLAS operand
  const cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;  // second
  // K == 0: C = beta·C (cuBLAS handles k = 0 as a scale).
  const int m = static_cast<int>(N), n = static_cast<int>(M), k = static_cast<int>(K);
  const int ldB = static_cast<int>(ldb), ldA = static_cast<int>(lda), ldC = static_cast<int>(ldc);
  const int nb = static_cast<int>(batch);
  if (dt == DT::F32) {
    const float a = static_cast<float>(alpha), b = static_cast<float>(beta);
    const cublasComputeType_t ct = g_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    TG_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, opB, opA, m, n, k, &a, B, CUDA_R_32F, ldB, strideB, A, CUDA_R_32F, ldA, strideA, &b, C,
        CUDA_R_32F, ldC, strideC, nb, ct, CUBLAS_GEMM_DEFAULT));
  } else if (dt == DT::F64) {
    TG_CUBLAS_CHECK(cublasDgemmStridedBatched(h, opB, opA, m, n, k, &alpha,
                                              static_cast<const double*>(B), ldB, strideB,
                                              static_cast<const double*>(A), ldA, strideA, &beta,
                                              static_cast<double*>(C), ldC, strideC, nb));
  } else if (dt == DT::BF16 || dt == DT::F16) {
    // bfloat16 / float16 operands and output, float32 accumulation (tensor cores), rounded once.
    const float a = static_cast<float>(alpha), b = static_cast<float>(beta);
    const cudaDataType_t t = dt == DT::BF16 ? CUDA_R_16BF : CUDA_R_16F;
    TG_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, opB, opA, m, n, k, &a, B, t, ldB, strideB, A, t,
                                               ldA, strideA, &b, C, t, ldC, strideC, nb,
                                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else {
    throw Error(std::string(current_op()) +
                ": gemm supports float32, float64, bfloat16 and float16 only");
  }
}

}  // namespace tg::cuda
