// ops/matmul/cpu/reduced_gemm.hpp — the CPU GEMM on bfloat16 and float16 operands
// (cpu::gemm_reduced), behind the path ops/matmul/reduced_gemm.hpp chooses: oneDNN's matmul
// primitive (ops/matmul/cpu/onednn.cpp) or the convert-then-sgemm fallback (reduced_gemm.cpp).
// Internal to ops/matmul/. Deliberately not here: float32/float64 (cpu::gemm, blas.cpp), dnnl.hpp
// (only onednn.cpp includes it).
#pragma once

#include "autograd/tensor.hpp"

#include <cstdint>
#include <string>

namespace tg::cpu {

// C (M, N) = op(A) · op(B) [+ bias on every row] [+ C], row-major with leading dimensions as in
// cpu::gemm (A (M, K), or (K, M) when ta; B (K, N), or (N, K) when tb). A, B and bias have dtype
// ab (bfloat16 or float16); C has dtype c: ab (rounded once from the float32 product) or
// float32 (a gradient accumulated across broadcast batches, rounded once by the caller).
// accumulate reads C (it is then never combined with a bias). M, N, K > 0.
struct ReducedGemm {
  DType ab = kBFloat16, c = kBFloat16;
  bool ta = false, tb = false;
  int64_t M = 0, N = 0, K = 0;
  const void* A = nullptr;
  int64_t lda = 0;
  const void* B = nullptr;
  int64_t ldb = 0;
  void* C = nullptr;
  int64_t ldc = 0;
  const void* bias = nullptr;  // (N), dtype ab
  bool accumulate = false;
};
// Runs g on the path gemm::path(g.ab) names; `op` names the caller in errors.
void gemm_reduced(const ReducedGemm& g, const char* op);

// The two paths (reduced_gemm.cpp, onednn.cpp).
void gemm_reduced_fallback(const ReducedGemm& g);
// oneDNN: false when it is not built or has no implementation for g (why: in *why).
bool gemm_reduced_onednn(const ReducedGemm& g, std::string* why);
// oneDNN's implementation name for an ab × ab -> ab product on this CPU ("brg:avx512_core_bf16"),
// or "" with *why set when it is not built or has none (a reference one counts as none unless
// allow_ref).
std::string onednn_impl(DType ab, std::string* why, bool allow_ref = false);
bool onednn_compiled();

}  // namespace tg::cpu
