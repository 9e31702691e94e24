// ops/attention/cpu/fused.cpp — the fused CPU attention kernels, cpu::attention_forward and
// cpu::attention_backward (fused.hpp): per (b, h) and per tile of query rows [r0, r1) with the
// tile's key range [klo, khi] (the plan), St = scale·Q[r0:r1]·K[klo:khi]ᵀ, each row masked (its
// structural span; the data parts: padding, lengths, bool, additive) and softmaxed by the row
// softmax of ops/softmax/cpu/softmax.cpp (a row with no allowed key gives P = 0), optional dropout
// on P, then O[r0:r1] = Pdrop·V[klo:khi]; the backward walks the same tiles (dV, dP, dS, dQ, dK).
// One tile loop, forward_tile beside backward_tile, over a products strategy: OpenBLAS reading each
// head's rows in place (any dtype), or, in float32 where the instruction-set table has them
// (ops/core/cpu/isa.hpp), the register-blocked kernels of gemm_avx512.cpp from operands packed once
// per head (K and V transposed), without OpenBLAS's per-call packing and zeroing of C
// (docs/cpu-kernels.md has both measured).
// MEMORY: the backward reads only q, k, v and the P tiles (plus dropout masks): per (b, h)
// Σ_tiles rows·width, i.e. O(T·(W + tile rows)) for local/blocked masks of width W.
// Why one file over ~600 lines: the forward and backward of one tile are one derivation and share
// the products strategies, the row buffers and the head loop; split apart, the pair would sit in
// two files (STYLE habit 1), as they did in ggml.
// Deliberately not here: the checks, the plan and the mask's lowering, the tape (ops/attention/).
#include "ops/attention/cpu/fused.hpp"
#include "ops/attention/cpu/bf16.hpp"
#include "ops/attention/cpu/rows.hpp"

#include "ops/attention/attention.hpp"

#include "autograd/tensor.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/detail.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <exception>
#include <limits>
#include <type_traits>
#include <vector>

namespace tg::cpu {

namespace {
using Dims = AttentionDims;
using Tile = AttentionTile;
using RowMask = AttentionRowMask;
using rows::mask_row;
using rows::row_span;
using rows::Span;
template <typename T>
using DenseOut = AttentionDense<T>;
template <typename T>
using DenseGrad = AttentionDense<T>;

constexpr const char* kSdpa = "scaled_dot_product_attention";
constexpr double kInf = std::numeric_limits<double>::infinity();
// Backward on the packed kernel: up to this many keys dV and dK go to the gradients' rows
// directly, beyond it through transposed per-head scratch (see PackedBackward).
constexpr int64_t kDirectKeys = 128;

// What every tile reads: the call itself.
using Ctx = AttentionCall;
// Element `base` of the P (or keep) tiles, as T.
template <typename T>
T* tile_block(void* tiles, int64_t base) {
  return static_cast<T*>(tiles) + base;
}

// ---- GEMM ----
// BLAS takes 32-bit sizes; larger ones are refused rather than silently truncated.
void check_blas_int(int64_t v) {
  if (v > INT_MAX)
    throw Error(fmt::format("{}: dimension {} exceeds the BLAS limit {}", kSdpa, v, INT_MAX));
}
// C (M, N) = alpha·op(A)·op(B) + beta·C, row-major; lda/ldb/ldc are the stored row lengths.
template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  for (int64_t v : {M, N, K, lda, ldb, ldc}) check_blas_int(v);
  cpu::gemm<T>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// The span grown to a multiple of kBatch keys (16: whole xsimd batches of float or double)
// inside [0, width) where the tile has room.
constexpr int64_t kBatch = 16;
Span widen(Span sp, int64_t width) {
  if (sp.e == sp.a) return sp;
  const int64_t want = std::min(width, (sp.e - sp.a + kBatch - 1) / kBatch * kBatch);
  const int64_t e = std::min(width, sp.a + want);
  return {std::min(sp.a, e - want), e};
}

// The position biases' gradients from row i's dS (keys klo + [a, e)): per bucket, and per head
// times the (negated) distance.
template <typename T>
void bias_grads(const RowMask& m, int64_t b, int64_t h, int64_t NH, int64_t i, int64_t klo, Span sp,
                const T* ds, const DenseGrad<T>& dense) {
  const int64_t ip = i + m.shift;
  double* dr = dense.d_rel ? dense.d_rel + (b * NH + h) * m.rel_n : nullptr;
  double da = 0;
  for (int64_t j = sp.a; j < sp.e; ++j) {
    const int64_t kj = klo + j;
    const double g = static_cast<double>(ds[j]);
    if (g == 0) continue;
    if (dr)
      dr[AttentionMask::t5_bucket(kj - ip, m.rel_bidirectional, m.rel_n, m.rel_max_distance)] += g;
    da -= g * static_cast<double>(ip > kj ? ip - kj : kj - ip);
  }
  if (dense.d_alibi) dense.d_alibi[b * NH + h] += da;
}

// Copies a rows×width tile into the dense (B, NH, T, S) tensor `dense` at rows r0.., keys klo...
template <typename T>
void scatter_tile(T* dense, const T* tile, const Dims& d, int64_t bh, const Tile& t) {
  for (int64_t r = 0; r < t.rows(); ++r) {
    T* row = dense + (bh * d.T + t.r0 + r) * d.S + t.klo;
    for (int64_t j = 0; j < t.width(); ++j) row[j] = tile[r * t.width() + j];
  }
}

[[noreturn]] void throw_fully_masked(const Ctx& c, int64_t b, int64_t h, int64_t i) {
  throw Error(fmt::format("{}: row {} of batch {}, head {} has no allowed key (mask: {})", kSdpa, i,
                          b, h, c.mask_name));
}

// ---- one (b, h)'s rows ----
// q (T, hs), k (S, hs), v (S, hs_v), output / dO (T, hs_v) and their gradients, as rows ld apart.
// In the default layout they are the tensors' own contiguous rows. With heads last, rows are
// NH·hs apart: used in place, except that K, V, dK and dV rows, which several row tiles read,
// go through contiguous per-head scratch (HeadRows): cheaper than strided reads once several
// tiles read them (docs/cpu-kernels.md, "Attention's layouts").
template <typename T>
struct Rows {
  T* p;
  int64_t ld;
  T* row(int64_t i) const { return p + i * ld; }
};

template <typename T>
struct HeadRows {
  const Dims& d;
  int which;  // the operand (Dims::kQ ...)
  bool copy;  // heads last and worth a copy
  std::vector<T> buf;
  int64_t ld;  // distance between the rows handed out
  HeadRows(const Dims& dims, int op, int64_t n, int64_t w, bool worth)
      : d(dims),
        which(op),
        copy(dims.heads_last && worth),
        buf(copy ? n * w : 0),
        ld(copy ? w : dims.ld(op, w)) {}
  // Rows of head (b, h) of x (n rows of w) to read.
  Rows<const T> in(const T* x, int64_t b, int64_t h, int64_t n, int64_t w) {
    if (!copy) return {x + d.row(which, b, h, 0, n, w), ld};
    for (int64_t t = 0; t < n; ++t) {
      const T* src = x + d.row(which, b, h, t, n, w);
      T* dst = buf.data() + t * w;
      for (int64_t j = 0; j < w; ++j) dst[j] = src[j];
    }
    return {buf.data(), ld};
  }
  // Rows of head (b, h) of x to write; done() puts them in place.
  Rows<T> out(T* x, int64_t b, int64_t h, int64_t n, int64_t w) {
    return {copy ? buf.data() : x + d.row(which, b, h, 0, n, w), ld};
  }
  void done(T* x, int64_t b, int64_t h, int64_t n, int64_t w) const {
    if (!copy) return;
    for (int64_t t = 0; t < n; ++t) {
      const T* src = buf.data() + t * w;
      T* dst = x + d.row(which, b, h, t, n, w);
      for (int64_t j = 0; j < w; ++j) dst[j] = src[j];
    }
  }
};

// The two products of a forward tile: St = scale·Q[r0:r1]·K[klo:khi]ᵀ into Pt (rows × width), and
// O[r0:r1] = Pv·V[klo:khi]. On OpenBLAS (any T) the head's rows are read in place.
template <typename T>
struct BlasForward {
  const Ctx& c;
  Rows<const T> q, k, v;
  void scores(const Tile& t, T* Pt) const {
    gemm<T>(false, true, t.rows(), t.width(), c.d.hs, static_cast<T>(c.scale), q.row(t.r0), q.ld,
            k.row(t.klo), k.ld, T(0), Pt, t.width());
  }
  void values(const Tile& t, const T* Pv, Rows<T> o) const {
    gemm<T>(false, false, t.rows(), c.d.hsv, t.width(), T(1), Pv, t.width(), v.row(t.klo), v.ld,
            T(0), o.row(t.r0), o.ld);
  }
  bool keys_masked() const { return false; }
};
// The packed products: attention_gemm_f32, or with c.bf16_products attention_gemm_bf16 (its
// operands, P and dS among them, rounded to bfloat16) on its own scratch bb, ba (bf16_scratch).
struct PackedGemm {
  const Ctx& c;
  float *bb, *ba;
  void operator()(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t am,
                  int64_t ak, const float* B, int64_t ldb, bool acc, float* C, int64_t ldc,
                  float* bpack = nullptr, float* apack = nullptr,
                  const float* keys = nullptr) const {
    if (c.bf16_products)
      return attention_gemm_bf16(M, N, K, alpha, A, am, ak, B, ldb, acc, C, ldc, bb, ba, keys);
    attention_gemm_f32(M, N, K, alpha, A, am, ak, B, ldb, acc, C, ldc, bpack, apack, keys);
  }
};
// The bfloat16 products' scratch (floats): B pair panels and A pairs for the largest operands of
// any tile's products (rows r, width w: (r, hs|hs_v), (r, w), (w, r), (hs|hs_v, r)); 0 without.
struct Bf16Scratch {
  int64_t b = 0, a = 0;
};
Bf16Scratch bf16_scratch(const Ctx& c) {
  if (!c.bf16_products) return {};
  const int64_t h = std::max(c.d.hs, c.d.hsv);
  auto a = [](int64_t M, int64_t K) { return (M + 5) / 6 * 6 * ((K + 1) / 2); };
  Bf16Scratch s;
  int64_t kmax = h;
  for (const Tile& t : c.plan->tiles) {
    const int64_t r = t.rows(), w = t.width();
    kmax = std::max({kmax, r, w});
    s.a = std::max({s.a, a(r, h), a(r, w), a(w, r), a(h, r)});
  }
  s.b = 64 * ((kmax + 1) / 2);
  return s;
}

// The same on the packed kernel (float32, or bfloat16 operands: PackedGemm): kt is the head's K
// transposed (hs, S), packed once per head, vc its V rows (copied when strided far apart, see
// far_apart); Q rows are read in place.
struct PackedForward {
  const Ctx& c;
  Rows<const float> q;
  const float* kt;
  Rows<const float> vc;
  float* pack;      // B panels (attention_gemm_f32's scratch)
  const float* kb;  // padding / lengths only: this batch's key_block row (0 or -inf), selected here
  PackedGemm mm;
  void scores(const Tile& t, float* Pt) const {
    mm(t.rows(), t.width(), c.d.hs, static_cast<float>(c.scale), q.row(t.r0), q.ld, 1, kt + t.klo,
       c.d.S, false, Pt, t.width(), pack, nullptr, kb ? kb + t.klo : nullptr);
  }
  bool keys_masked() const { return kb != nullptr; }
  void values(const Tile& t, const float* Pv, Rows<float> o) const {
    mm(t.rows(), c.d.hsv, t.width(), 1.f, Pv, t.width(), 1, vc.row(t.klo), vc.ld, false,
       o.row(t.r0), o.ld);
  }
};

// The four products of a backward tile: dV[klo:khi] (+)= Pvᵀ·dO[r0:r1], dP = dO[r0:r1]·V[klo:khi]ᵀ,
// dQ[r0:r1] = scale·dS·K[klo:khi], dK[klo:khi] (+)= scale·dSᵀ·Q[r0:r1] (acc: add to what earlier
// tiles wrote). On OpenBLAS (any T) the head's rows are read and written in place.
template <typename T>
struct BlasBackward {
  const Ctx& c;
  Rows<const T> q, k, v, g;
  Rows<T> dq, dk, dv;
  void dvalues(const Tile& t, const T* Pv, bool acc) const {
    gemm<T>(true, false, t.width(), c.d.hsv, t.rows(), T(1), Pv, t.width(), g.row(t.r0), g.ld,
            acc ? T(1) : T(0), dv.row(t.klo), dv.ld);
  }
  void dprobs(const Tile& t, T* dP) const {
    gemm<T>(false, true, t.rows(), t.width(), c.d.hsv, T(1), g.row(t.r0), g.ld, v.row(t.klo), v.ld,
            T(0), dP, t.width());
  }
  void dqueries(const Tile& t, const T* dS) const {
    gemm<T>(false, false, t.rows(), c.d.hs, t.width(), static_cast<T>(c.scale), dS, t.width(),
            k.row(t.klo), k.ld, T(0), dq.row(t.r0), dq.ld);
  }
  void dkeys(const Tile& t, const T* dS, bool acc) const {
    gemm<T>(true, false, t.width(), c.d.hs, t.rows(), static_cast<T>(c.scale), dS, t.width(),
            q.row(t.r0), q.ld, acc ? T(1) : T(0), dk.row(t.klo), dk.ld);
  }
};
// The same on the packed kernel (float32, or bfloat16 operands: PackedGemm). Q and dO rows are
// read in place; kc holds K's rows (copied when strided far apart, see far_apart), vt V
// transposed (hs_v, S). With long key rows
// (S > kDirectKeys) dV and dK come out transposed, dVᵀ (hs_v, S) = dOᵀ·Pv and dKᵀ (hs, S) =
// scale·Qᵀ·dS accumulated over the tiles in dvt and dkt (the kernel then reads P and dS rows
// contiguously, not their columns 4 KiB apart) and transposed into the gradients once per head;
// with short ones they go to the gradients' rows directly (the transposes would cost more).
struct PackedBackward {
  const Ctx& c;
  Rows<const float> q, g, kc;
  const float* vt;
  Rows<float> dq, dk, dv;
  float *dvt, *dkt;     // null: direct
  float *pack, *apack;  // attention_gemm_f32's scratch: B panels, A (dOᵀ, Qᵀ) blocks
  PackedGemm mm;
  void dvalues(const Tile& t, const float* Pv, bool acc) const {
    if (!dvt)
      return mm(t.width(), c.d.hsv, t.rows(), 1.f, Pv, 1, t.width(), g.row(t.r0), g.ld, acc,
                dv.row(t.klo), dv.ld, pack, apack);
    mm(c.d.hsv, t.width(), t.rows(), 1.f, g.row(t.r0), 1, g.ld, Pv, t.width(), acc, dvt + t.klo,
       c.d.S, pack, apack);
  }
  void dprobs(const Tile& t, float* dP) const {
    mm(t.rows(), t.width(), c.d.hsv, 1.f, g.row(t.r0), g.ld, 1, vt + t.klo, c.d.S, false, dP,
       t.width(), pack);
  }
  void dqueries(const Tile& t, const float* dS) const {
    mm(t.rows(), c.d.hs, t.width(), static_cast<float>(c.scale), dS, t.width(), 1, kc.row(t.klo),
       kc.ld, false, dq.row(t.r0), dq.ld);
  }
  void dkeys(const Tile& t, const float* dS, bool acc) const {
    const float sc = static_cast<float>(c.scale);
    if (!dkt)
      return mm(t.width(), c.d.hs, t.rows(), sc, dS, 1, t.width(), q.row(t.r0), q.ld, acc,
                dk.row(t.klo), dk.ld, pack, apack);
    mm(c.d.hs, t.width(), t.rows(), sc, q.row(t.r0), 1, q.ld, dS, t.width(), acc, dkt + t.klo,
       c.d.S, pack, apack);
  }
};

// One tile of one (b, h) (the products read that head's rows): P tile into Pt (and the dropout
// mask into Kt), output rows into o.
template <typename T, typename Prod>
void forward_tile(const Ctx& c, const RowMask& rm, int64_t b, int64_t h, const Tile& t,
                  const Prod& prod, Rows<T> o, T* Pt, T* Kt, T* Pd, const DenseOut<T>& dense) {
  const Dims& d = c.d;
  const int64_t bh = b * d.NH + h, rows = t.rows(), width = t.width();
  if (width == 0) {  // no key: output rows 0
    if (c.errors_on_fully_masked) throw_fully_masked(c, b, h, t.r0);
    for (int64_t r = 0; r < rows; ++r) std::fill_n(o.row(t.r0 + r), d.hsv, T(0));
    return;
  }
  prod.scores(t, Pt);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = t.r0 + r;
    T* s = Pt + r * width;
    // Only the row's structural span takes part: P = 0 outside it, as for keys outside the tile.
    const Span sp = prod.keys_masked() ? row_span(c.plan->lo[i], c.plan->hi[i], t.klo, width)
                                       : mask_row(rm, b, h, i, c.plan->lo[i], c.plan->hi[i], t.klo,
                                                  width, d.S, s, false);
    if (dense.scores)  // pre-filled with -inf
      std::copy(s + sp.a, s + sp.e, dense.scores + (bh * d.T + i) * d.S + t.klo + sp.a);
    // The softmax runs over the span widened to whole SIMD batches where the tile allows: the
    // widening's keys are structurally blocked (-inf, so P = 0 exactly), and the kernel then has
    // no scalar exp tail (which made causal rows, of every length, slower than full ones).
    const Span w = widen(sp, width);
    std::fill(s + w.a, s + sp.a, static_cast<T>(-kInf));
    std::fill(s + sp.e, s + w.e, static_cast<T>(-kInf));
    // the rule for fully masked and NaN rows: softmax_row (a NaN query gives a NaN row)
    if (!softmax_row(s + w.a, s + w.a, w.e - w.a) && c.errors_on_fully_masked)
      throw_fully_masked(c, b, h, i);
    std::fill(s, s + w.a, T(0));
    std::fill(s + w.e, s + width, T(0));
  }
  const T* Pv = Pt;  // what multiplies V: P, or P ⊙ keep with dropout
  if (c.dropout) {
    const T keep_scale = static_cast<T>(1.0 / (1.0 - c.p));
    Generator& gen = default_generator();
    for (int64_t e = 0; e < rows * width; ++e) {
      Kt[e] = gen.uniform() >= c.p ? keep_scale : T(0);
      Pd[e] = Pt[e] * Kt[e];
    }
    Pv = Pd;
  }
  prod.values(t, Pv, o);
  if (dense.weights) scatter_tile(dense.weights, Pv, d, bh, t);
  if (dense.probs) scatter_tile(dense.probs, Pt, d, bh, t);
}

// Backward of one tile of one (b, h) (the products read and write that head's rows): dV, dP, dS,
// dQ, dK.
template <typename T, typename Prod>
void backward_tile(const Ctx& c, const RowMask& rm, int64_t b, int64_t h, const Tile& t,
                   const Prod& prod, Rows<T> dq, T* Pd, T* dP, const DenseGrad<T>& dense,
                   bool kv_fresh) {
  const Dims& d = c.d;
  const int64_t bh = b * d.NH + h, rows = t.rows(), width = t.width();
  if (width == 0) {  // no key: dQ rows 0
    for (int64_t r = 0; r < rows; ++r) std::fill_n(dq.row(t.r0 + r), d.hs, T(0));
    return;
  }
  const int64_t base = bh * c.plan->per_bh + t.off;
  const T* Pt = tile_block<T>(c.P, base);
  const T* Kt = c.dropout ? tile_block<T>(c.keep, base) : nullptr;
  const T* Pv = Pt;
  if (Kt) {
    for (int64_t e = 0; e < rows * width; ++e) Pd[e] = Pt[e] * Kt[e];
    Pv = Pd;
  }
  // dK and dV accumulate over tiles (and a group's query heads); the first tile of the group's
  // first head (kv_fresh) sets them when it spans every key
  const bool acc = !(kv_fresh && &t == &c.plan->tiles.front() && c.plan->first_spans_all);
  prod.dvalues(t, Pv, acc);
  prod.dprobs(t, dP);
  if (Kt)
    for (int64_t e = 0; e < rows * width; ++e) dP[e] *= Kt[e];
  std::vector<T> blocked(dense.dprobs ? width : 0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = t.r0 + r;
    T* dp = dP + r * width;
    const T* p = Pt + r * width;
    if (dense.dprobs) {  // dP as the probe sees it: 0 where blocked
      std::fill(blocked.begin(), blocked.end(), T(0));
      mask_row(rm, b, h, i, c.plan->lo[i], c.plan->hi[i], t.klo, width, d.S, blocked.data(), true);
      T* out = dense.dprobs + (bh * d.T + i) * d.S + t.klo;
      for (int64_t j = 0; j < width; ++j) out[j] = std::isinf(blocked[j]) ? T(0) : dp[j];
    }
    // dS over the row's structural span (P = 0, hence dS = 0, outside it, as in the forward)
    const Span sp = row_span(c.plan->lo[i], c.plan->hi[i], t.klo, width);
    softmax_backward_row(dp + sp.a, dp + sp.a, p + sp.a, sp.e - sp.a);
    std::fill(dp, dp + sp.a, T(0));
    std::fill(dp + sp.e, dp + width, T(0));
    if (dense.d_rel || dense.d_alibi) bias_grads(rm, b, h, d.NH, i, t.klo, sp, dp, dense);
  }
  if (dense.dscores) scatter_tile(dense.dscores, dP, d, bh, t);
  prod.dqueries(t, dP);
  prod.dkeys(t, dP, acc);
}

// Head (b, h)'s rows of operand `which` (n rows of w) in place.
template <typename P>
Rows<P> head_rows(const Dims& d, int which, P* x, int64_t b, int64_t h, int64_t n, int64_t w) {
  return {x + d.row(which, b, h, 0, n, w), d.ld(which, w)};
}
// Whether rows that the packed kernel reads as its B operand (row after row, once per block of A
// rows) are worth a contiguous copy (HeadRows): when they lie far apart (more than 256 KiB
// spanned; heads last at large S), where each row read would be a TLB miss.
bool far_apart(const Dims& d, int which, int64_t n, int64_t w) {
  const int64_t ld = d.ld(which, w);
  return ld != w && n * ld * 4 > (int64_t(256) << 10);
}
// Head (b, h)'s rows of operand `which` (n rows of w), transposed into buf: (w, n).
const float* transposed_rows(const Dims& d, int which, const float* x, int64_t b, int64_t h,
                             int64_t n, int64_t w, std::vector<float>& buf) {
  buf.resize(static_cast<size_t>(n * w));
  attention_transpose_f32(n, w, x + d.row(which, b, h, 0, n, w), d.ld(which, w), buf.data(), n);
  return buf.data();
}

// The packed kernel's scratch. B panels: 64 columns by the longest inner dimension of a product
// whose B it may pack (hs, hs_v, a tile's rows, or a tile's width where K or V rows are read in
// place: far_apart keeps them in place only while they span <= 256 KiB, at least 1 KiB apart, so
// S <= 256). A blocks: the most rows of a product whose A it may pack (hs, hs_v, or a tile's width
// in the direct form, S <= kDirectKeys), rounded up to 6, by a tile's rows.
static_assert(kAttentionRowTileFull >= kAttentionRowTile && kAttentionRowTileFull >= 256,
              "pack_floats assumes it");
int64_t pack_floats(const Dims& d) { return 64 * std::max({d.hs, d.hsv, kAttentionRowTileFull}); }
int64_t apack_floats(const Dims& d) {
  return (std::max({d.hs, d.hsv, kDirectKeys}) + 5) / 6 * 6 * kAttentionRowTileFull;
}

// Products' flops (full T x S per head) below which the heads run serially: waking the pool costs
// microseconds, more with passive waiting (autograd/openmp_wait.hpp), and a tiny context (one
// sampled character) would spend more on that than on its heads.
constexpr int64_t kHeadsParallelFlops = int64_t(1) << 20;
// Calls body(scratch, b, h, first, last) for every query head, each thread with its own Scratch
// (made by make()): in parallel (OpenMP, tg::set_num_threads) when `parallel`, there is more than
// one thread and unit and the work reaches kHeadsParallelFlops. A unit is one query head, or with
// `by_group` one key/value head's group of query heads in order (first / last say where in it the
// head is: the backward accumulates the group's dK, dV in one thread, so no two threads write the
// same rows). The units write disjoint rows, so the result is the same bits at any thread count.
// OpenBLAS runs each GEMM on the calling thread meanwhile (cpu::SerialBlas: never two pools at
// once). An error thrown for a head is rethrown after the loop, the lowest unit's first, as the
// serial order.
template <typename Make, typename Body>
void for_heads(const Dims& d, bool parallel, bool by_group, Make make, Body body) {
  const int64_t g = by_group ? d.group() : 1, n = d.B * d.NH / std::max<int64_t>(g, 1);
  const int64_t units_per_b = d.NH / std::max<int64_t>(g, 1);
  auto unit = [&](auto& s, int64_t u) {
    const int64_t b = u / units_per_b, h0 = (u % units_per_b) * g;
    for (int64_t j = 0; j < g; ++j) body(s, b, h0 + j, j == 0, j == g - 1);
  };
  const int64_t flops = 2 * d.B * d.NH * d.T * d.S * (d.hs + d.hsv);
  if (!parallel || n < 2 || flops < kHeadsParallelFlops || get_num_threads() < 2) {
    auto s = make();
    for (int64_t u = 0; u < n; ++u) unit(s, u);
    return;
  }
  const SerialBlas serial;
  std::exception_ptr err;
  int64_t err_at = n;
#pragma omp parallel
  {
    auto s = make();
#pragma omp for schedule(static)
    for (int64_t u = 0; u < n; ++u) {
      try {
        unit(s, u);
      } catch (...) {
#pragma omp critical(tg_sdpa_error)
        if (u < err_at) err_at = u, err = std::current_exception();
      }
    }
  }
  if (err) std::rethrow_exception(err);
}

// Whether the float32 products run on the packed kernel of the instruction-set table (else
// OpenBLAS).
template <typename T>
bool packed_products() {
  return std::is_same_v<T, float> && attention_packed_products();
}

// ---- the forward ----

// Per-thread scratch of the packed forward: K transposed and V rows, once per key/value head; the
// P tile without a tape.
struct PackedForwardScratch {
  std::vector<float> kt;
  HeadRows<float> vc;
  std::vector<float> pack, p;
  std::vector<float> bb, ba;  // the bfloat16 products' scratch (bf16_scratch)
  int64_t kv_of = -1;         // the (b, key/value head) kt and vr hold
  const float* ktp = nullptr;
  Rows<const float> vr{nullptr, 0};
};

// The forward on the packed float32 kernels of the instruction-set table. scratch_k: the dropout
// keep tile without a tape; scratch_pd: P ⊙ keep.
void forward_packed(const Ctx& c, const RowMask& rm, float* o, const float* q, const float* k,
                    const float* v, const AttentionDense<float>& dense, float* scratch_k,
                    float* scratch_pd) {
  const Dims& d = c.d;
  const bool keep_all = c.P != nullptr;
  const float* kb = static_cast<const float*>(rm.key_block);
  const Bf16Scratch bf = bf16_scratch(c);
  for_heads(
      d, !c.dropout, false,
      [&] {
        return PackedForwardScratch{
            {},
            HeadRows<float>(d, Dims::kV, d.S, d.hsv, far_apart(d, Dims::kV, d.S, d.hsv)),
            std::vector<float>(pack_floats(d)),
            std::vector<float>(keep_all ? 0 : c.plan->max_tile),
            std::vector<float>(bf.b),
            std::vector<float>(bf.a)};
      },
      [&](PackedForwardScratch& s, int64_t b, int64_t h, bool, bool) {
        // a group's query heads read one key/value head: packed once
        const int64_t kvu = b * d.kv_heads() + d.head_of(Dims::kK, h);
        if (s.kv_of != kvu) {
          s.ktp = transposed_rows(d, Dims::kK, k, b, h, d.S, d.hs, s.kt);
          s.vr = s.vc.in(v, b, h, d.S, d.hsv);
          s.kv_of = kvu;
        }
        const PackedForward prod{c,
                                 head_rows(d, Dims::kQ, q, b, h, d.T, d.hs),
                                 s.ktp,
                                 s.vr,
                                 s.pack.data(),
                                 kb ? kb + b * d.S : nullptr,
                                 {c, s.bb.data(), s.ba.data()}};
        const Rows<float> oh = head_rows(d, Dims::kO, o, b, h, d.T, d.hsv);
        for (const Tile& t : c.plan->tiles) {
          const int64_t base = (b * d.NH + h) * c.plan->per_bh + t.off;
          float* Pt = keep_all ? tile_block<float>(c.P, base) : s.p.data();
          float* Kt = !c.dropout ? nullptr : keep_all ? tile_block<float>(c.keep, base) : scratch_k;
          forward_tile(c, rm, b, h, t, prod, oh, Pt, Kt, scratch_pd, dense);
        }
      });
}

// The forward on OpenBLAS, reading each head's rows in place (copies of strided rows that several
// tiles reread).
template <typename T>
void forward_blas(const Ctx& c, const RowMask& rm, T* o, const T* q, const T* k, const T* v,
                  const AttentionDense<T>& dense, T* scratch_k, T* scratch_pd) {
  const Dims& d = c.d;
  const bool keep_all = c.P != nullptr;
  const bool reread = c.plan->tiles.size() > 1;  // K and V rows are read by several tiles
  struct Scratch {  // per-head copies of strided rows; the P tile without a tape
    HeadRows<T> hq, hk, hv, ho;
    std::vector<T> p;
  };
  for_heads(
      d, !c.dropout, false,
      [&] {
        return Scratch{HeadRows<T>(d, Dims::kQ, d.T, d.hs, false),
                       HeadRows<T>(d, Dims::kK, d.S, d.hs, reread),
                       HeadRows<T>(d, Dims::kV, d.S, d.hsv, reread),
                       HeadRows<T>(d, Dims::kO, d.T, d.hsv, false),
                       std::vector<T>(keep_all ? 0 : c.plan->max_tile)};
      },
      [&](Scratch& s, int64_t b, int64_t h, bool, bool) {
        const BlasForward<T> prod{c, s.hq.in(q, b, h, d.T, d.hs), s.hk.in(k, b, h, d.S, d.hs),
                                  s.hv.in(v, b, h, d.S, d.hsv)};
        const Rows<T> oh = s.ho.out(o, b, h, d.T, d.hsv);
        for (const Tile& t : c.plan->tiles) {
          const int64_t base = (b * d.NH + h) * c.plan->per_bh + t.off;
          T* Pt = keep_all ? tile_block<T>(c.P, base) : s.p.data();
          T* Kt = !c.dropout ? nullptr : keep_all ? tile_block<T>(c.keep, base) : scratch_k;
          forward_tile(c, rm, b, h, t, prod, oh, Pt, Kt, scratch_pd, dense);
        }
        s.ho.done(o, b, h, d.T, d.hsv);
      });
}

// ---- the backward ----

// dK and dV rows of head (b, h) zeroed in place (they accumulate over tiles).
template <typename T>
void zero_kv_rows(const Dims& d, T* pdk, T* pdv, int64_t b, int64_t h) {
  for (int64_t t = 0; t < d.S; ++t) {
    std::fill_n(pdk + d.row(Dims::kK, b, h, t, d.S, d.hs), d.hs, T(0));
    std::fill_n(pdv + d.row(Dims::kV, b, h, t, d.S, d.hsv), d.hsv, T(0));
  }
}

// Per-thread scratch of the packed backward: K rows (packed where strided far apart) and V
// transposed, once per key/value head; dV and dK transposed unless direct; P ⊙ keep, dP.
struct PackedBackwardScratch {
  HeadRows<float> kc;
  std::vector<float> vt, dvt, dkt, pack, apack, Pd, dP;
  std::vector<float> bb, ba;  // the bfloat16 products' scratch (bf16_scratch)
  int64_t kv_of = -1;         // the (b, key/value head) kr and vtp hold
  Rows<const float> kr{nullptr, 0};
  const float* vtp = nullptr;
};

// The backward on the packed float32 kernels. zero_kv: dK, dV start from 0 (the first tile does
// not span every key); direct: dV and dK go straight to the gradient rows (else through dvt, dkt,
// transposed out after the group's last head).
void backward_packed(const Ctx& c, const RowMask& rm, float* pdq, float* pdk, float* pdv,
                     const float* pg, const float* pq, const float* pk, const float* pv,
                     const AttentionDense<float>& dense, bool zero_kv, bool direct) {
  const Dims& d = c.d;
  const Bf16Scratch bf = bf16_scratch(c);
  for_heads(
      d, true, true,
      [&] {
        return PackedBackwardScratch{
            HeadRows<float>(d, Dims::kK, d.S, d.hs, far_apart(d, Dims::kK, d.S, d.hs)),
            {},
            std::vector<float>(direct ? 0 : d.hsv * d.S),
            std::vector<float>(direct ? 0 : d.hs * d.S),
            std::vector<float>(pack_floats(d)),
            std::vector<float>(apack_floats(d)),
            std::vector<float>(c.dropout ? c.plan->max_tile : 0),
            std::vector<float>(c.plan->max_tile),
            std::vector<float>(bf.b),
            std::vector<float>(bf.a)};
      },
      [&](PackedBackwardScratch& s, int64_t b, int64_t h, bool first, bool last) {
        const int64_t kvu = b * d.kv_heads() + d.head_of(Dims::kK, h);
        if (s.kv_of != kvu) {
          s.kr = s.kc.in(pk, b, h, d.S, d.hs);
          s.vtp = transposed_rows(d, Dims::kV, pv, b, h, d.S, d.hsv, s.vt);
          s.kv_of = kvu;
        }
        const Rows<float> dqh = head_rows(d, Dims::kQ, pdq, b, h, d.T, d.hs),
                          dkh = head_rows(d, Dims::kK, pdk, b, h, d.S, d.hs),
                          dvh = head_rows(d, Dims::kV, pdv, b, h, d.S, d.hsv);
        const PackedBackward prod{c,
                                  head_rows(d, Dims::kQ, pq, b, h, d.T, d.hs),
                                  head_rows(d, Dims::kO, pg, b, h, d.T, d.hsv),
                                  s.kr,
                                  s.vtp,
                                  dqh,
                                  dkh,
                                  dvh,
                                  direct ? nullptr : s.dvt.data(),
                                  direct ? nullptr : s.dkt.data(),
                                  s.pack.data(),
                                  s.apack.data(),
                                  {c, s.bb.data(), s.ba.data()}};
        if (zero_kv && direct && first) zero_kv_rows(d, pdk, pdv, b, h);
        if (zero_kv && !direct && first) {
          std::fill(s.dvt.begin(), s.dvt.end(), 0.f);
          std::fill(s.dkt.begin(), s.dkt.end(), 0.f);
        }
        for (const Tile& t : c.plan->tiles)
          backward_tile(c, rm, b, h, t, prod, dqh, s.Pd.data(), s.dP.data(), dense, first);
        if (direct || !last) return;
        attention_transpose_f32(d.hsv, d.S, s.dvt.data(), d.S, dvh.p, dvh.ld);
        attention_transpose_f32(d.hs, d.S, s.dkt.data(), d.S, dkh.p, dkh.ld);
      });
}

// The backward on OpenBLAS. kv_scratch: dK, dV accumulate in per-head scratch, copied out whole
// (heads last with several tiles), else in place.
template <typename T>
void backward_blas(const Ctx& c, const RowMask& rm, T* pdq, T* pdk, T* pdv, const T* pg,
                   const T* pq, const T* pk, const T* pv, const AttentionDense<T>& dense,
                   bool zero_kv, bool kv_scratch) {
  const Dims& d = c.d;
  const bool reread = c.plan->tiles.size() > 1;  // K, V, dK, dV rows serve several tiles
  struct Scratch {  // per-head copies of strided rows (and dK, dV accumulated); P ⊙ keep, dP
    HeadRows<T> hq, hk, hv, hg, hdq, hdk, hdv;
    std::vector<T> Pd, dP;
  };
  for_heads(
      d, true, true,
      [&] {
        return Scratch{HeadRows<T>(d, Dims::kQ, d.T, d.hs, false),
                       HeadRows<T>(d, Dims::kK, d.S, d.hs, reread),
                       HeadRows<T>(d, Dims::kV, d.S, d.hsv, reread),
                       HeadRows<T>(d, Dims::kO, d.T, d.hsv, false),
                       HeadRows<T>(d, Dims::kQ, d.T, d.hs, false),
                       HeadRows<T>(d, Dims::kK, d.S, d.hs, reread),
                       HeadRows<T>(d, Dims::kV, d.S, d.hsv, reread),
                       std::vector<T>(c.dropout ? c.plan->max_tile : 0),
                       std::vector<T>(c.plan->max_tile)};
      },
      [&](Scratch& s, int64_t b, int64_t h, bool first, bool last) {
        const BlasBackward<T> prod{c,
                                   s.hq.in(pq, b, h, d.T, d.hs),
                                   s.hk.in(pk, b, h, d.S, d.hs),
                                   s.hv.in(pv, b, h, d.S, d.hsv),
                                   s.hg.in(pg, b, h, d.T, d.hsv),
                                   s.hdq.out(pdq, b, h, d.T, d.hs),
                                   s.hdk.out(pdk, b, h, d.S, d.hs),
                                   s.hdv.out(pdv, b, h, d.S, d.hsv)};
        if (zero_kv && !kv_scratch && first) zero_kv_rows(d, pdk, pdv, b, h);
        if (zero_kv && kv_scratch && first) {
          std::fill(s.hdk.buf.begin(), s.hdk.buf.end(), T(0));
          std::fill(s.hdv.buf.begin(), s.hdv.buf.end(), T(0));
        }
        for (const Tile& t : c.plan->tiles)
          backward_tile(c, rm, b, h, t, prod, prod.dq, s.Pd.data(), s.dP.data(), dense, first);
        s.hdq.done(pdq, b, h, d.T, d.hs);
        if (!last) return;  // the group's dK, dV rows are complete after its last head
        s.hdk.done(pdk, b, h, d.S, d.hs);
        s.hdv.done(pdv, b, h, d.S, d.hsv);
      });
}

}  // namespace

template <typename T>
void attention_forward(const AttentionCall& c, T* o, const T* q, const T* k, const T* v,
                       const AttentionDense<T>& dense) {
  // Without a tape the P (and keep) tiles are scratch: one tile buffer reused.
  std::vector<T> scratch_k, scratch_pd;  // dropout: keep mask (without a tape), P ⊙ keep
  if (c.dropout) {
    scratch_pd.resize(c.plan->max_tile);
    if (c.P == nullptr) scratch_k.resize(c.plan->max_tile);
  }
  // Dropout draws from the one generator in order, so with dropout and several threads the heads
  // stay serial, and the OpenBLAS path (which threads inside each GEMM) runs instead.
  if constexpr (std::is_same_v<T, float>)
    if (packed_products<T>() && (!c.dropout || get_num_threads() < 2))
      return forward_packed(c, *c.mask, o, q, k, v, dense, scratch_k.data(), scratch_pd.data());
  forward_blas(c, *c.mask, o, q, k, v, dense, scratch_k.data(), scratch_pd.data());
}

template <typename T>
void attention_backward(const AttentionCall& c, T* pdq, T* pdk, T* pdv, const T* pg, const T* pq,
                        const T* pk, const T* pv, const AttentionDense<T>& dense) {
  // Every tile writes its dQ rows. dK and dV accumulate over tiles, from 0 unless the first tile
  // spans every key; on the packed kernel, and on OpenBLAS with heads last and several tiles,
  // they accumulate in per-head scratch, copied out whole; else in place, zeroed per head first.
  const bool zero_kv = !c.plan->first_spans_all;
  if constexpr (std::is_same_v<T, float>)
    if (packed_products<T>()) {  // packed: dV and dK straight to the gradient rows
      const bool direct = c.d.S <= kDirectKeys;
      return backward_packed(c, *c.mask, pdq, pdk, pdv, pg, pq, pk, pv, dense, zero_kv, direct);
    }
  const bool kv_scratch = c.d.heads_last && c.plan->tiles.size() > 1;
  backward_blas(c, *c.mask, pdq, pdk, pdv, pg, pq, pk, pv, dense, zero_kv, kv_scratch);
}

template void attention_forward<float>(const AttentionCall&, float*, const float*, const float*,
                                       const float*, const AttentionDense<float>&);
template void attention_forward<double>(const AttentionCall&, double*, const double*, const double*,
                                        const double*, const AttentionDense<double>&);
template void attention_backward<float>(const AttentionCall&, float*, float*, float*, const float*,
                                        const float*, const float*, const float*,
                                        const AttentionDense<float>&);
template void attention_backward<double>(const AttentionCall&, double*, double*, double*,
                                         const double*, const double*, const double*, const double*,
                                         const AttentionDense<double>&);

}  // namespace tg::cpu
