// tools/cuda_emu/cublas_v2.h — the cuBLAS subset tapegrad uses, as plain loops on the host
// (TG_CUDA_EMU): handles, streams, status names, and column-major GEMM — cublas{S,D}gemm, their
// StridedBatched forms and cublasGemmStridedBatchedEx / cublasGemmEx with every type CUDA_R_32F
// (compute 32F; 32F_FAST_TF32 is computed as 32F, no TF32 rounding) or every type CUDA_R_16BF /
// CUDA_R_16F (compute 32F: float accumulation, C rounded once to nearest even) — with cuBLAS's
// argument checks (CUBLAS_STATUS_INVALID_VALUE for negative sizes or a leading dimension too small)
// and its beta == 0 rule (C is not read, so NaN in C does not leak). Every matrix a call touches
// must lie inside one device block, else CUBLAS_STATUS_EXECUTION_FAILED with a note on stderr.
// Accumulation is in the compute type (float for 32F, double for D), in k order.
// Deliberately not modelled: speed, other data types (mixed 16-bit / 32-bit operands), device
// pointer mode, TF32 rounding, the workspace, cuBLAS's own summation order (tensor-core tiling):
// float results differ from a GPU's in the last bits.
#pragma once

#include <cuda_runtime.h>

#include "tg_emu/half.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

typedef enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
typedef enum { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14 } cudaDataType_t;
typedef cudaDataType_t cudaDataType;
typedef enum {
  CUBLAS_COMPUTE_16F = 64,
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_FAST_16F = 74,
  CUBLAS_COMPUTE_32F_FAST_16BF = 75,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
  CUBLAS_COMPUTE_64F = 70,
} cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1, CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99 } cublasGemmAlgo_t;
typedef enum {
  CUBLAS_DEFAULT_MATH = 0,
  CUBLAS_TENSOR_OP_MATH = 1,
  CUBLAS_PEDANTIC_MATH = 2,
  CUBLAS_TF32_TENSOR_OP_MATH = 3,
} cublasMath_t;

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};
typedef cublasContext* cublasHandle_t;

inline cublasStatus_t cublasCreate(cublasHandle_t* h) {
  *h = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDestroy(cublasHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasGetStream(cublasHandle_t h, cudaStream_t* s) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  *s = h->stream;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->math = m;
  return CUBLAS_STATUS_SUCCESS;
}
inline const char* cublasGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}
inline const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    default:
      return cublasGetStatusName(s);
  }
}

namespace tg_emu {
// Half<BF> (tg_emu/half.h): a bfloat16 or float16 element as cuBLAS stores its result.

// Column-major C (m, n) = alpha·op(A)·op(B) + beta·C for each of `batch` matrices, with
// op(A) (m, k) and op(B) (k, n); T is the stored type, Acc the accumulation (compute) type, S
// alpha's and beta's type.
template <typename T, typename Acc, typename S = T>
cublasStatus_t gemm(const char* call, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                    int m, int n, int k, const S* alpha, const T* A, int lda, long long sA,
                    const T* B, int ldb, long long sB, const S* beta, T* C, int ldc, long long sC,
                    int batch) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  const int a_rows = ta == CUBLAS_OP_N ? m : k, a_cols = ta == CUBLAS_OP_N ? k : m;
  const int b_rows = tb == CUBLAS_OP_N ? k : n, b_cols = tb == CUBLAS_OP_N ? n : k;
  auto at_least = [](int ld, int rows) { return ld >= (rows > 1 ? rows : 1); };
  if (m < 0 || n < 0 || k < 0 || batch < 0 || !at_least(lda, a_rows) || !at_least(ldb, b_rows) ||
      !at_least(ldc, m) || ta > CUBLAS_OP_C || tb > CUBLAS_OP_C) {
    std::fprintf(stderr,
                 "tg_emu: %s: invalid value (m %d n %d k %d lda %d ldb %d ldc %d batch %d)\n", call,
                 m, n, k, lda, ldb, ldc, batch);
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const S al = *alpha, be = *beta;  // host pointer mode
  const bool read_ab = k > 0 && al != S(0);
  // The footprint of each operand over the whole batch must be one device block.
  auto inside = [&](const T* p, int rows, int cols, int ld, long long stride, const char* what) {
    if (rows == 0 || cols == 0) return true;
    const long long last = (long long)(batch - 1) * stride;
    const long long lo = last < 0 ? last : 0,
                    hi = (last > 0 ? last : 0) + (long long)(cols - 1) * ld + rows;
    if (find_region(p + lo, size_t(hi - lo) * sizeof(T))) return true;
    std::fprintf(stderr,
                 "tg_emu: %s: %s (%d x %d, ld %d, stride %lld, batch %d) at %p is not "
                 "inside one device block\n",
                 call, what, rows, cols, ld, stride, batch, static_cast<const void*>(p));
    return false;
  };
  if ((read_ab &&
       (!inside(A, a_rows, a_cols, lda, sA, "A") || !inside(B, b_rows, b_cols, ldb, sB, "B"))) ||
      !inside(C, m, n, ldc, sC, "C"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  DeviceScope open;
  for (int b = 0; b < batch; ++b) {
    const T* Ab = A + b * sA;
    const T* Bb = B + b * sB;
    T* Cb = C + b * sC;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        Acc acc = 0;
        if (read_ab)
          for (int l = 0; l < k; ++l) {
            const T a = ta == CUBLAS_OP_N ? Ab[i + (long long)l * lda] : Ab[l + (long long)i * lda];
            const T bv =
                tb == CUBLAS_OP_N ? Bb[l + (long long)j * ldb] : Bb[j + (long long)l * ldb];
            acc += Acc(a) * Acc(bv);
          }
        T& c = Cb[i + (long long)j * ldc];
        c = be == S(0) ? T(Acc(al) * acc) : T(Acc(al) * acc + Acc(be) * Acc(c));
      }
  }
  return CUBLAS_STATUS_SUCCESS;
}
}  // namespace tg_emu

inline cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                                cublasOperation_t tb, int m, int n, int k,
                                                const float* alpha, const float* A, int lda,
                                                long long sA, const float* B, int ldb, long long sB,
                                                const float* beta, float* C, int ldc, long long sC,
                                                int batch) {
  return tg_emu::gemm<float, float>("cublasSgemmStridedBatched", h, ta, tb, m, n, k, alpha, A, lda,
                                    sA, B, ldb, sB, beta, C, ldc, sC, batch);
}
inline cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                                cublasOperation_t tb, int m, int n, int k,
                                                const double* alpha, const double* A, int lda,
                                                long long sA, const double* B, int ldb,
                                                long long sB, const double* beta, double* C,
                                                int ldc, long long sC, int batch) {
  return tg_emu::gemm<double, double>("cublasDgemmStridedBatched", h, ta, tb, m, n, k, alpha, A,
                                      lda, sA, B, ldb, sB, beta, C, ldc, sC, batch);
}
inline cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                  int m, int n, int k, const float* alpha, const float* A, int lda,
                                  const float* B, int ldb, const float* beta, float* C, int ldc) {
  return tg_emu::gemm<float, float>("cublasSgemm", h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0,
                                    beta, C, ldc, 0, 1);
}
inline cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                  int m, int n, int k, const double* alpha, const double* A,
                                  int lda, const double* B, int ldb, const double* beta, double* C,
                                  int ldc) {
  return tg_emu::gemm<double, double>("cublasDgemm", h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb,
                                      0, beta, C, ldc, 0, 1);
}
inline cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType_t at, int lda, long long sA, const void* B,
    cudaDataType_t bt, int ldb, long long sB, const void* beta, void* C, cudaDataType_t ct, int ldc,
    long long sC, int batch, cublasComputeType_t compute, cublasGemmAlgo_t) {
  const bool half = (at == CUDA_R_16BF || at == CUDA_R_16F) && bt == at && ct == at &&
                    compute == CUBLAS_COMPUTE_32F;
  if (!half && (at != CUDA_R_32F || bt != CUDA_R_32F || ct != CUDA_R_32F ||
                (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_TF32))) {
    std::fprintf(stderr,
                 "tg_emu: cublasGemmStridedBatchedEx: only CUDA_R_32F with compute 32F or "
                 "32F_FAST_TF32, and CUDA_R_16BF / CUDA_R_16F (A, B and C alike) with compute 32F "
                 "are emulated\n");
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (half) {
    const auto* al = static_cast<const float*>(alpha);
    const auto* be = static_cast<const float*>(beta);
    if (at == CUDA_R_16BF) {
      using H = tg_emu::Half<true>;
      return tg_emu::gemm<H, float, float>(
          "cublasGemmStridedBatchedEx", h, ta, tb, m, n, k, al, static_cast<const H*>(A), lda, sA,
          static_cast<const H*>(B), ldb, sB, be, static_cast<H*>(C), ldc, sC, batch);
    }
    using H = tg_emu::Half<false>;
    return tg_emu::gemm<H, float, float>(
        "cublasGemmStridedBatchedEx", h, ta, tb, m, n, k, al, static_cast<const H*>(A), lda, sA,
        static_cast<const H*>(B), ldb, sB, be, static_cast<H*>(C), ldc, sC, batch);
  }
  return tg_emu::gemm<float, float>(
      "cublasGemmStridedBatchedEx", h, ta, tb, m, n, k, static_cast<const float*>(alpha),
      static_cast<const float*>(A), lda, sA, static_cast<const float*>(B), ldb, sB,
      static_cast<const float*>(beta), static_cast<float*>(C), ldc, sC, batch);
}
inline cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                   int m, int n, int k, const void* alpha, const void* A,
                                   cudaDataType_t at, int lda, const void* B, cudaDataType_t bt,
                                   int ldb, const void* beta, void* C, cudaDataType_t ct, int ldc,
                                   cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  return cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta,
                                    C, ct, ldc, 0, 1, compute, algo);
}
