// ops/matmul/plan.hpp — how a matmul maps onto a batch of row-major GEMMs (PyTorch's rank rules
// and batch broadcasting), shared by the same-dtype products (matmul.cpp) and the mixed
// float32 × bfloat16 / float16 ones (mixed.cpp). Internal to ops/matmul/.
// Every product is a batch of gemms C[i] (M, N) = A[i] (M, K) · B[i] (K, N), where operand
// batches are addressed by element offsets (the same offset repeated where a batch dim is
// broadcast). An operand that is a transposed view of row-major matrices (strides (..., 1, R))
// is used as it lies, with its transpose flag set.
// Deliberately not here: the GEMMs themselves, the ops' records.
#pragma once

#include "autograd/tensor.hpp"

#include <cstdint>
#include <vector>

namespace tg::matmul_plan {

struct Plan {
  int64_t M = 0, K = 0, N = 0;        // per-batch gemm sizes (after folding)
  int64_t batch = 1;                  // number of gemms
  std::vector<int64_t> off_a, off_b;  // element offset of each gemm's A and B (empty: i·M·K, i·K·N)
  bool bcast_a = false, bcast_b = false;  // some A (B) matrix is used by several gemms
  bool ta = false, tb = false;            // A (B) is stored transposed: (K, M) ((N, K)) row-major
  Shape out_shape;
  Device dev;                                 // where the operands live
  int64_t lda() const { return ta ? M : K; }  // stored row lengths
  int64_t ldb() const { return tb ? K : N; }
  int64_t a_offset(int64_t i) const { return off_a.empty() ? i * M * K : off_a[i]; }
  int64_t b_offset(int64_t i) const { return off_b.empty() ? i * K * N : off_b[i]; }
};

// PyTorch's matmul rules for a (stored transposed when ta) and b (tb). 1-D lhs is (1, K) and
// 1-D rhs is (K, 1), with those dims dropped from the output.
Plan make_plan(const char* op, const Tensor& a, const Tensor& b, bool ta, bool tb);
// Is x (..., R, C) the transpose of row-major (..., C, R) matrices (strides (..., 1, R))?
bool stored_transposed(const Tensor& x);
// Zero-sized gemms are skipped (BLAS rejects a leading dimension of 0); K == 0 gives zeros.
inline bool empty_gemm(const Plan& p) { return p.M == 0 || p.N == 0 || p.K == 0 || p.batch == 0; }
// dA = dC·Bᵀ, dB = Aᵀ·dC in recorded ops (create_graph), 1-D operands as matrices and batch
// dims broadcast back by sum_to; dtypes as the recorded matmuls give them.
std::vector<Tensor> matmul_grads(const Tensor& dC, const Tensor& A, const Tensor& B,
                                 const Shape& shape_a, const Shape& shape_b, bool ga, bool gb);
// BLAS takes 32-bit sizes; larger ones are refused rather than silently truncated.
void check_blas_int(int64_t v);

}  // namespace tg::matmul_plan
