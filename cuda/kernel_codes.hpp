// cuda/kernel_codes.hpp — the codes and plain descriptors both backends' kernels take, in
// tg::kern: element types, the elementwise / unary / reduction op codes, the strided iteration
// space and the attention mask description. Neutral: no CUDA, no library header, no function; the
// CPU (ops/cpu) and the CUDA kernels (cuda/kernels.cuh, which takes them into tg::cuda) read the
// same enumerators, so a code means one thing on both.
#pragma once

#include <cstdint>

namespace tg::kern {

// Element types, numbered like tg::DType (ops/ static_asserts this).
enum class DT : uint8_t { F32 = 0, F64 = 1, I64 = 2, Bool = 3 };

// ---- strided N-d iteration (broadcasting, permutes, slices) ----
constexpr int kMaxDims = 8;
// An N-d index space `shape` (ndim <= kMaxDims; ndim 0 is one element) and, per operand, the
// element stride of each dim (0 where the operand is broadcast) plus an element offset.
struct Strided {
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t stride[3][kMaxDims] = {};  // operand 0 = out, 1 = a, 2 = b (or cond / x / y for where)
  int64_t offset[3] = {};
};

// Elementwise binary ops (cuda/elementwise.cu, ops/elementwise.cpp).
enum class BinOp : uint8_t { Add, Sub, Mul, Div, Pow, Max, Min, Eq, Ne, Lt, Le, Gt, Ge };

// Unary ops with up to two scalar parameters p0, p1 (computed in double, stored as dt):
enum class UnOp : uint8_t {
  Neg,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Abs,
  Tanh,
  Sigmoid,
  Relu,
  GeluErf,   // x·Φ(x)
  GeluTanh,  // 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³)))
  AddS,      // x + p0
  MulS,      // x · p0
  RSubS,     // p0 - x
  RDivS,     // p0 / x
  PowS,      // x^p0
  Clamp,     // min(max(x, p0), p1), NaN stays NaN; p0 = -inf or p1 = +inf for one-sided clamps
};

// Reductions over the middle dim of (outer, r, inner).
enum class RedOp : uint8_t { Sum, Max, Min };

// ---- attention ----
// The structural mask, one contiguous key range per query row (see ops/attention.hpp):
//   i' = i + shift (shift = S − T for bottom-right alignment, else 0);
//   causal: j <= i'; local (left, right): i' − left <= j <= i' + right (left/right < 0: none);
//   blocked(W, back, ahead, causal): floor(i'/W) − back <= floor(j/W) <= floor(i'/W) + ahead,
//   and j <= i' if causal. Parts intersect. Plus data parts: key_allowed (B, S) bool (true =
//   allowed) and key_lengths (B) int64 (j < len[b] allowed), allowed (bool, strided over
//   (B, NH, T, S), true = allowed), additive (same dtype as q, strided over (B, NH, T, S)).
constexpr int kMaxBlocked = 4;
struct MaskDesc {
  int64_t shift = 0;
  bool causal = false;
  bool has_local = false;
  int64_t left = 0, right = 0;
  int n_blocked = 0;
  int64_t block_W[kMaxBlocked] = {}, block_back[kMaxBlocked] = {}, block_ahead[kMaxBlocked] = {};
  bool block_causal[kMaxBlocked] = {};
  const bool* key_allowed = nullptr;     // (B, S) or null
  const int64_t* key_lengths = nullptr;  // (B) or null
  const bool* allowed = nullptr;         // or null
  int64_t allowed_stride[4] = {};        // element strides over (B, NH, T, S); 0 = broadcast
  const void* additive = nullptr;        // or null
  int64_t additive_stride[4] = {};
};
// Largest head size the fused kernels take.
constexpr int64_t kAttentionMaxHeadSize = 128;

}  // namespace tg::kern
