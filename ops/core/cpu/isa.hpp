// ops/core/cpu/isa.hpp — the one table of the CPU kernels that exist in more than one instruction-set
// variant (PyTorch's DispatchStub shape): a slot per kernel, filled by the variant files
// (softmax.cpp for the build's own architecture; softmax_avx512.cpp, unary_avx512.cpp and
// attention_avx512.cpp for AVX-512), one table chosen once at start-up by isa.cpp. Kernel files
// call through table(); none of them names an instruction set. A slot a variant leaves empty
// (nullptr) means the build's own kernel: the xtensor kernels for the unary ops, OpenBLAS for the
// attention's products. The slots come in families (softmax, unary, attention, reduce) whose
// variant is chosen per CPU model from measurements (isa.cpp's preference list, filled from
// `FILTER=variants bash bench/run.sh`), not by the instruction set alone. Adding a variant kernel:
// one slot here, one body per variant file, one fill line. Internal to the CPU kernels (ops/<family>/cpu/).
#pragma once

// The op codes; nothing with code or static objects: the AVX-512 files include this header (see
// softmax_rows.hpp for why).
#include "ops/kern/kernel_codes.hpp"

#include <cstdint>

namespace tg::cpu::isa {
using kern::UnOp;

struct Table {
  const char* name = nullptr;  // "avx512", or xsimd's name of the build's architecture
  // The row softmax / log_softmax (softmax_rows.hpp, kernels.hpp's rule); every variant has them.
  bool (*softmax_row_f32)(float* y, const float* x, int64_t n, bool is_log) = nullptr;
  bool (*softmax_row_f64)(double* y, const double* x, int64_t n, bool is_log) = nullptr;
  void (*softmax_backward_row_f32)(float* dx, const float* g, const float* y, int64_t n,
                                   bool is_log) = nullptr;
  void (*softmax_backward_row_f64)(double* dx, const double* g, const double* y, int64_t n,
                                   bool is_log) = nullptr;
  // float32 unary ops on one contiguous range (unary_rows.hpp), as cpu::unary / unary_backward;
  // return false for an op the variant leaves to unary.cpp.
  bool (*unary_f32)(UnOp op, float* out, const float* x, int64_t n, float p0, float p1) = nullptr;
  bool (*unary_backward_f32)(UnOp op, float* dx, const float* g, const float* x, const float* y,
                             int64_t n, float p0, float p1) = nullptr;
  // The column sums of the reductions over a leading dim (reduce_cols.hpp); every variant has
  // them, with the same bits.
  void (*add_rows_f32)(double* acc, const float* x, int64_t r, int64_t stride, int64_t m) = nullptr;
  void (*add_rows_f64)(double* acc, const double* x, int64_t r, int64_t stride,
                       int64_t m) = nullptr;
  // The fused attention's float32 products (kernels.hpp: attention_gemm_f32 and
  // attention_transpose_f32); empty: the attention multiplies through OpenBLAS.
  void (*attention_gemm_f32)(int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                             int64_t am, int64_t ak, const float* B, int64_t ldb, const float* keys,
                             bool acc, float* C, int64_t ldc, float* bpack, float* apack) = nullptr;
  void (*attention_transpose_f32)(int64_t rows, int64_t cols, const float* src, int64_t lds,
                                  float* dst, int64_t ldd) = nullptr;
  // The same products with bfloat16 operands (rounded while packed) on AVX512-BF16 dot products
  // (ops/attention/cpu/gemm_bf16_avx512.cpp); empty where the CPU or build lacks them.
  void (*attention_gemm_bf16)(int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                              int64_t am, int64_t ak, const float* B, int64_t ldb,
                              const float* keys, bool acc, float* C, int64_t ldc, float* bpack,
                              float* apack) = nullptr;
};

// The table in use: per family, AVX-512's where the build compiled it, the CPU has AVX-512
// F/CD/DQ/BW/VL and the preference list does not say the build's own is faster on this CPU model;
// set_simd_kernels and set_kernel_variant (kernels.hpp) switch.
const Table& table();

// What each variant file fills.
namespace native {
void fill_softmax(Table& t);  // softmax.cpp
void fill_reduce(Table& t);   // reduce.cpp
}  // namespace native
namespace avx512 {
void fill_softmax(Table& t);    // softmax_avx512.cpp
void fill_unary(Table& t);      // unary_avx512.cpp
void fill_attention(Table& t);  // attention_avx512.cpp
void fill_reduce(Table& t);     // reduce_avx512.cpp
// gemm_bf16_avx512.cpp; isa.cpp calls it only where the CPU has AVX512-BF16.
void fill_attention_bf16(Table& t);
}  // namespace avx512

}  // namespace tg::cpu::isa
