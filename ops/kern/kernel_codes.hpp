// ops/kern/kernel_codes.hpp — the codes and plain descriptors both backends' kernels take, in
// tg::kern: element types, the elementwise / unary / reduction op codes, the strided iteration
// space, the attention mask description with its one function, key_range, and the attention
// operands' layout (host and device).
// Neutral: no CUDA, no library header; the CPU (ops/<family>/cpu) and the CUDA kernels (cuda/kernels.cuh,
// which takes them into tg::cuda) read the same enumerators, so a code means one thing on both.
#pragma once

#include <cstdint>

namespace tg::kern {

// Element types, numbered like tg::DType (ops/ static_asserts this).
enum class DT : uint8_t { F32 = 0, F64 = 1, I64 = 2, Bool = 3, BF16 = 4, F16 = 5 };

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

// Elementwise binary ops (cuda/elementwise.cu, ops/binary/elementwise.cpp).
enum class BinOp : uint8_t { Add, Sub, Mul, Div, Pow, Max, Min, Eq, Ne, Lt, Le, Gt, Ge };

// Unary ops with up to two scalar parameters p0, p1 (computed in double, stored as dt): one
// enumerator per line of ops/kern/unary_list.inc, whose formulas are ops/kern/unary_formulas.hpp's.
enum class UnOp : uint8_t {
#define X(Code, ...) Code,
#include "ops/kern/unary_list.inc"
#undef X
};

// Reductions over the middle dim of (outer, r, inner).
enum class RedOp : uint8_t { Sum, Max, Min };
// scatter (None: the last write wins) and scatter_reduce's reductions (ops/index/scatter.cpp).
enum class ScatterOp : uint8_t { None, Sum, Prod, Mean, Amax, Amin };
// Running scans and the product along one dim of (outer, n, inner) lines (ops/reduce/scan.cpp).
enum class ScanOp : uint8_t { Cumprod, Prod, Cummax, Cummin, Logcumsumexp };
// nonzero on the GPU (ops/shape/diagonal.cpp, cuda/nonzero.cu): elements per chunk, whose counts and
// offsets (chunks + 1 int64, the caller's device buffer) place each chunk's entries.
constexpr int64_t kNonzeroChunk = 1024;
inline int64_t nonzero_chunks(int64_t n) { return (n + kNonzeroChunk - 1) / kNonzeroChunk; }

// ---- attention ----
// The structural mask, one contiguous key range per query row (see ops/attention/attention.hpp):
//   i' = i + shift (shift = S − T for bottom-right alignment, else 0);
//   causal: j <= i'; local (left, right): i' − left <= j <= i' + right (left/right < 0: none);
//   blocked(W, back, ahead, causal): floor(i'/W) − back <= floor(j/W) <= floor(i'/W) + ahead,
//   and j <= i' if causal. Parts intersect. Plus data parts: key_allowed (B, S) bool (true =
//   allowed) and key_lengths (B) int64 (j < len[b] allowed), allowed (bool, strided over
//   (B, NH, T, S), true = allowed), additive (same dtype as q, strided over (B, NH, T, S)).
// ops/attention/lowering.cpp lowers an AttentionMask into one (attention_mask_desc) for either backend.
// Blocked parts past kMaxBlocked go to more_blocked, (W, back, ahead, causal) per part in host
// memory: the CPU reads them, the fused CUDA kernels take masks without them.
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
  const int64_t* more_blocked = nullptr;
  int n_more_blocked = 0;
  // Position biases (AttentionMask::relative_bias, alibi), float64 on the kernels' device; the
  // CUDA path sets them (the CPU reads its AttentionRowMask): entry (i, j) of head h gets
  // rel[h·rel_hs + rel_bucket[j - i' - diag_lo]] - alibi[h]·|i' - j| (position_bias), the bucket
  // of each diagonal d = j - i' computed once on the host (AttentionMask::t5_bucket, the CPU's
  // float arithmetic bit for bit); diag_lo = -(T - 1 + shift), the lowest d.
  const double* rel = nullptr;
  const int64_t* rel_bucket = nullptr;
  int64_t rel_hs = 0, rel_n = 0, diag_lo = 0;
  const double* alibi = nullptr;
};

// nvcc compiles key_range for both sides; g++ (the CPU, and cuda/ on the host emulator) for one.
#if defined(__CUDACC__)
#define TG_HOST_DEVICE __host__ __device__
#else
#define TG_HOST_DEVICE
#endif

// One blocked part's bounds on [lo, hi] for query position ip (floor division: ip may be < 0).
TG_HOST_DEVICE inline void blocked_range(int64_t ip, int64_t W, int64_t back, int64_t ahead,
                                         bool causal, int64_t& lo, int64_t& hi) {
  const int64_t q = ip / W, blk = (ip % W != 0 && (ip < 0) != (W < 0)) ? q - 1 : q;
  const int64_t l = (blk - back) * W, h = (blk + ahead + 1) * W - 1;
  lo = lo > l ? lo : l;
  hi = hi < h ? hi : h;
  if (causal && ip < hi) hi = ip;
}
// The position biases' term of entry (i, j) of head h (MaskDesc::rel, alibi), 0 without them.
TG_HOST_DEVICE inline double position_bias(const MaskDesc& m, int64_t h, int64_t i, int64_t j) {
  const int64_t d = j - (i + m.shift);
  double add = 0;
  if (m.rel) add += m.rel[h * m.rel_hs + m.rel_bucket[d - m.diag_lo]];
  if (m.alibi) add -= m.alibi[h] * static_cast<double>(d < 0 ? -d : d);
  return add;
}
// The structural key range [lo, hi] (inclusive; empty when lo > hi) of query row i against S keys:
// the one definition, read by the CPU's plan (ops/attention/sdpa.cpp), AttentionMask::key_range and the
// CUDA plan kernel (cuda/attention.cu).
TG_HOST_DEVICE inline void key_range(const MaskDesc& m, int64_t i, int64_t S, int64_t& lo,
                                     int64_t& hi) {
  lo = 0;
  hi = S - 1;
  const int64_t ip = i + m.shift;
  if (m.causal && ip < hi) hi = ip;
  if (m.has_local && m.left >= 0 && ip - m.left > lo) lo = ip - m.left;
  if (m.has_local && m.right >= 0 && ip + m.right < hi) hi = ip + m.right;
  for (int k = 0; k < m.n_blocked; ++k)
    blocked_range(ip, m.block_W[k], m.block_back[k], m.block_ahead[k], m.block_causal[k], lo, hi);
  for (int k = 0; k < m.n_more_blocked; ++k) {
    const int64_t* b = m.more_blocked + 4 * k;
    blocked_range(ip, b[0], b[1], b[2], b[3] != 0, lo, hi);
  }
}
// The fused attention's sizes and operand layout, read by both backends (ops/attention/cpu/fused.cpp,
// cuda/attention.cu). q, k, v and the output come as (B, NH, T, hs), heads last (B, T, NH, hs),
// packed (B, T, 3, NH, hs: kQKV, S = T; q, k and v point at the same tensor) or q heads last with
// k and v packed (B, S, 2, NH, hs: kKV, hs_v = hs); every head's rows are addressed with an offset
// and a leading dimension (row, ld), never permuted. Gradients come in their operand's layout.
// Grouped-query attention: k and v have NKV heads (NH a multiple of it) and query head h reads
// key/value head h / (NH / NKV), PyTorch's enable_gqa (repeat_interleave) order, in place.
struct AttentionLayout {
  int64_t B = 0, NH = 0, T = 0, S = 0, hs = 0, hsv = 0;
  bool heads_last = false;
  enum Packing : int { kNone, kQKV, kKV } packing = kNone;
  int64_t NKV = 0;  // key/value heads; 0: NH (no grouping)
  // Operands: kQ (q, dq), kK (k, dk), kV (v, dv), kO (output, dO).
  static constexpr int kQ = 0, kK = 1, kV = 2, kO = 3;
  TG_HOST_DEVICE int64_t kv_heads() const { return NKV > 0 ? NKV : NH; }
  TG_HOST_DEVICE int64_t group() const { return NH / kv_heads(); }  // query heads per k/v head
  // The operand's own head count, and the head of it that query head h reads.
  TG_HOST_DEVICE int64_t heads(int which) const {
    return which == kK || which == kV ? kv_heads() : NH;
  }
  TG_HOST_DEVICE int64_t head_of(int which, int64_t h) const {
    return which == kK || which == kV ? h / group() : h;
  }
  // Offset of row t of query head (b, h)'s operand with n rows per head of w elements, and the
  // distance between its rows (a GEMM's leading dimension).
  TG_HOST_DEVICE int64_t row(int which, int64_t b, int64_t h, int64_t t, int64_t n,
                             int64_t w) const {
    const int64_t H = heads(which), hh = head_of(which, h);
    if (!heads_last) return ((b * H + hh) * n + t) * w;
    return (b * n + t) * ld(which, w) + part(which) * H * w + hh * w;
  }
  TG_HOST_DEVICE int64_t ld(int which, int64_t w) const {
    return heads_last ? parts(which) * heads(which) * w : w;
  }
  // How many operands share the operand's tensor rows, and its place among them.
  TG_HOST_DEVICE int64_t parts(int which) const {
    if (packing == kQKV && which != kO) return 3;
    if (packing == kKV && (which == kK || which == kV)) return 2;
    return 1;
  }
  TG_HOST_DEVICE int64_t part(int which) const {
    if (packing == kQKV && which != kO) return which;
    if (packing == kKV && which == kV) return 1;
    return 0;
  }
  // The same for an operand's own sizes: rows per head (T or S) and row width (hs or hs_v).
  TG_HOST_DEVICE int64_t at(int which, int64_t b, int64_t h, int64_t t) const {
    return row(which, b, h, t, which == kQ || which == kO ? T : S, width(which));
  }
  TG_HOST_DEVICE int64_t stride(int which) const { return ld(which, width(which)); }
  TG_HOST_DEVICE int64_t width(int which) const { return which == kQ || which == kK ? hs : hsv; }
};

// Largest head size the fused kernels take.
constexpr int64_t kAttentionMaxHeadSize = 128;

}  // namespace tg::kern
