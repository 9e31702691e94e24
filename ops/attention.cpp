// ops/attention.cpp — scaled_dot_product_attention (and its packed self- and cross-attention
// forms): the checks, and the fused CPU kernel (one tape node, tiled by query rows, cpu::gemm on
// raw pointers, the row softmax of ops/cpu/softmax.cpp, forward and backward side by side). q, k, v
// come as (B, NH, T, hs), heads last (B, T, NH, hs), packed (B, T, 3, NH, hs), or q heads last with
// k and v packed (B, S, 2, NH, hs): every head's rows are
// addressed with an offset and a leading dimension (Dims::row), never permuted by an op. A call on
// a CUDA device goes, after the checks, to ops/attention_cuda.cpp (through ops/attention_cuda.hpp).
//
// The products (QKᵀ, P·V and the four of the backward) run on OpenBLAS, reading each head's rows
// in place, except in float32 where the CPU has AVX-512 (cpu::simd_avx512()): there they run on
// our register-blocked kernel (ops/cpu/attention_avx512.cpp) from operands packed once per head
// (K and V transposed), without OpenBLAS's per-call packing and zeroing of C. Measured (sdpa
// forward + backward, f32, one thread, same process, alternating): 0.87x OpenBLAS's time at
// (2, 8, 1024, 64), 0.84x at (8, 8, 256, 32), 0.89x at (32, 4, 64, 32).
//
// SDPA, per (b, h) and per tile of kRowTile query rows [r0, r1): the tile's key range
// [klo, khi] is the union of the rows' structural ranges (AttentionMask::key_range; the same for
// every (b, h)). St = scale·Q[r0:r1]·K[klo:khi]ᵀ is one gemm with leading dims (no copies); each
// row then blocks (-inf) the keys outside its own range or refused by the data parts (padding,
// lengths, bool), adds the additive part, and is softmaxed (a row with no allowed key gives P = 0).
// Optional dropout on P, then O[r0:r1] = Pdrop·V[klo:khi] (one gemm). An additive mask that
// requires grad is one more input of the node: the backward writes dS densely (B, NH, T, S) and
// sums it to the mask's shape (sum_to), since dScores = dMask.
// MEMORY: backward keeps only q, k, v and the P tiles (plus dropout masks): per (b, h)
// Σ_tiles rows·width, i.e. O(B·NH·T·(W + kRowTile)) for local/blocked masks of width W. The full
// T×S matrix is stored only when the mask really is full. Without a tape, one tile buffer is
// reused. Deliberately not here: the composed forms (attention(), additive attention:
// attention_composed.cpp), the mask description (attention_mask.cpp), the CUDA half, modules.
#include "ops/attention.hpp"
#include "ops/attention_cuda.hpp"
#include "ops/cpu/kernels.hpp"
#include "ops/detail.hpp"
#include "ops/ops.hpp"

#include <algorithm>
#include <climits>
#include <exception>
#include <cmath>
#include <limits>
#include <memory>
#include <tuple>
#include <type_traits>
#include <vector>

namespace tg {
using namespace detail;

namespace {
constexpr const char* kSdpa = "scaled_dot_product_attention";
constexpr int64_t kRowTile = 64;       // query rows per tile when the mask has structure
constexpr int64_t kRowTileFull = 256;  // without structure every tile spans all S keys: bigger
                                       // tiles mean fewer, larger gemms
constexpr double kInf = std::numeric_limits<double>::infinity();
// Backward on the AVX-512 kernel: up to this many keys dV and dK go to the gradients' rows
// directly, beyond it through transposed per-head scratch (see Avx512Backward).
constexpr int64_t kDirectKeys = 128;

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

// ---- validation ----
struct Dims {
  int64_t B, NH, T, S, hs, hsv;
  bool heads_last = false;  // q, k, v, output (B, T, NH, hs) instead of (B, NH, T, hs)
  // Packing (heads last): kQKV, q, k, v are one (B, T, 3, NH, hs) tensor (S = T); kKV, k and v
  // are one (B, S, 2, NH, hs) tensor (hs_v = hs), q its own.
  enum Packing { kNone, kQKV, kKV } packing = kNone;
  // Operands: kQ (q, dq), kK (k, dk), kV (v, dv), kO (output, dO).
  // Offset of row t of head (b, h) of an operand with n rows per head of w elements, and the
  // distance between its rows (a GEMM's leading dimension).
  int64_t row(int which, int64_t b, int64_t h, int64_t t, int64_t n, int64_t w) const {
    if (!heads_last) return ((b * NH + h) * n + t) * w;
    return (b * n + t) * ld(which, w) + part(which) * NH * w + h * w;
  }
  int64_t ld(int which, int64_t w) const { return heads_last ? parts(which) * NH * w : w; }
  // How many operands share the operand's tensor rows, and its place among them.
  int64_t parts(int which) const {
    if (packing == kQKV && which != kO) return 3;
    if (packing == kKV && (which == kK || which == kV)) return 2;
    return 1;
  }
  int64_t part(int which) const {
    if (packing == kQKV && which != kO) return which;
    if (packing == kKV && which == kV) return 1;
    return 0;
  }
  static constexpr int kQ = 0, kK = 1, kV = 2, kO = 3;
};

// Options and the mask against the dims (`shapes` names the inputs in errors).
void check_options(const Dims& d, const AttentionMask& mask, const SDPAOptions& opts,
                   const std::string& shapes, Device dev) {
  if (!(opts.dropout_p >= 0.0 && opts.dropout_p < 1.0))
    throw Error(
        fmt::format("{}: dropout_p must be in [0, 1), got {} ({})", kSdpa, opts.dropout_p, shapes));
  if (opts.scale && !std::isfinite(*opts.scale))
    throw Error(fmt::format("{}: scale must be finite, got {} ({})", kSdpa, *opts.scale, shapes));
  if (dev.is_cuda())  // the checks read the mask's tensors on the host
    attention_mask_on(mask, kCPU).check(kSdpa, d.B, d.NH, d.T, d.S);
  else
    mask.check(kSdpa, d.B, d.NH, d.T, d.S);
}

Dims check_sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMask& mask,
                const SDPAOptions& opts) {
  check_float(q, kSdpa, "q", true);
  check_float(k, kSdpa, "k", true);
  check_float(v, kSdpa, "v", true);
  const std::string shapes = fmt::format("q {}, k {}, v {}", shape_str(q.shape()),
                                         shape_str(k.shape()), shape_str(v.shape()));
  const bool hl = opts.heads_last;
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4)
    throw Error(fmt::format("{}: {}: expected 4-D q {}, k {}, v {}", kSdpa, shapes,
                            hl ? "(B, T, NH, hs)" : "(B, NH, T, hs)",
                            hl ? "(B, S, NH, hs)" : "(B, NH, S, hs)",
                            hl ? "(B, S, NH, hs_v) (heads_last)" : "(B, NH, S, hs_v)"));
  check_same_dtype(q, k, kSdpa, "q", "k");
  check_same_dtype(q, v, kSdpa, "q", "v");
  const int dh = hl ? 2 : 1, dt = hl ? 1 : 2;  // the head and the length dims
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0) || k.size(dh) != q.size(dh) ||
      v.size(dh) != q.size(dh))
    throw Error(fmt::format("{}: {}: batch and head dims (B, NH) differ{}", kSdpa, shapes,
                            hl ? " (heads_last: (B, T, NH, hs))" : ""));
  if (k.size(3) != q.size(3))
    throw Error(fmt::format("{}: {}: head size hs of q ({}) and k ({}) differ", kSdpa, shapes,
                            q.size(3), k.size(3)));
  if (v.size(dt) != k.size(dt))
    throw Error(fmt::format("{}: {}: key length S of k ({}) and v ({}) differ", kSdpa, shapes,
                            k.size(dt), v.size(dt)));
  if (q.device() != k.device() || q.device() != v.device())
    throw Error(fmt::format("{}: {}: q is on {}, k on {}, v on {}; move them to one device", kSdpa,
                            shapes, q.device().str(), k.device().str(), v.device().str()));
  const Dims d{q.size(0), q.size(dh), q.size(dt), k.size(dt), q.size(3), v.size(3), hl};
  check_options(d, mask, opts, shapes, q.device());
  return d;
}

// ---- the plan: row tiles and their key ranges ----
struct Tile {
  int64_t r0, r1, klo, khi;
  int64_t off;  // element offset of this tile's P block inside one (b, h)
  int64_t rows() const { return r1 - r0; }
  int64_t width() const { return khi >= klo ? khi - klo + 1 : 0; }
};
struct Plan {
  std::vector<Tile> tiles;
  std::vector<int64_t> lo, hi;   // each row's structural key range (empty when lo > hi)
  int64_t per_bh = 0;            // P elements per (b, h)
  int64_t max_tile = 0;          // the largest rows·width
  bool first_spans_all = false;  // tile 0 covers every key: it writes dK, dV (beta = 0)
};

Plan make_plan(const AttentionMask& m, int64_t T, int64_t S) {
  Plan p;
  p.lo.resize(T);
  p.hi.resize(T);
  for (int64_t i = 0; i < T; ++i) std::tie(p.lo[i], p.hi[i]) = m.key_range(i, T, S);
  const int64_t tile = m.has_structure() ? kRowTile : kRowTileFull;
  for (int64_t r0 = 0; r0 < T; r0 += tile) {
    Tile t{r0, std::min(T, r0 + tile), S, -1, p.per_bh};
    for (int64_t i = t.r0; i < t.r1; ++i)
      if (p.lo[i] <= p.hi[i]) {
        t.klo = std::min(t.klo, p.lo[i]);
        t.khi = std::max(t.khi, p.hi[i]);
      }
    if (t.khi < t.klo) t.klo = 0, t.khi = -1;  // every row of the tile is structurally empty
    p.per_bh += t.rows() * t.width();
    p.max_tile = std::max(p.max_tile, t.rows() * t.width());
    p.tiles.push_back(t);
  }
  p.first_spans_all = S > 0 && !p.tiles.empty() && p.tiles[0].klo == 0 && p.tiles[0].khi == S - 1;
  return p;
}

// ---- the data parts of the mask, read per row ----
struct RowMask {
  const bool* key_allowed = nullptr;  // (B, S)
  const int64_t* lengths = nullptr;   // (B)
  const bool* allowed = nullptr;      // broadcast to (B, NH, T, S) through allowed_st
  const double* additive = nullptr;   // broadcast to (B, NH, T, S) through additive_st
  Shape allowed_st, additive_st;
  Tensor additive64;  // keeps the float64 copy alive
  // Padding and lengths together, in q's dtype: (B, S), 0 where the key is allowed, -inf where
  // not. Defined when they are the only data parts (the common case: a vectorised select per row).
  Tensor key_block;
};

RowMask make_row_mask(const AttentionMask& m, const Dims& d, DType dt) {
  RowMask r;
  const Shape full{d.B, d.NH, d.T, d.S};
  if (m.key_allowed_.defined()) r.key_allowed = m.key_allowed_.data<bool>();
  if (m.key_lengths_.defined()) r.lengths = m.key_lengths_.data<int64_t>();
  if (m.allowed_.defined()) {
    r.allowed = m.allowed_.data<bool>();
    r.allowed_st = broadcast_strides(m.allowed_.shape(), full);
  }
  if (m.additive_.defined()) {
    r.additive64 = m.additive_.detach().to(kFloat64);
    r.additive = r.additive64.data<double>();
    r.additive_st = broadcast_strides(m.additive_.shape(), full);
  }
  if ((r.key_allowed || r.lengths) && !r.allowed && !r.additive) {
    r.key_block = Tensor::empty({d.B, d.S}, dt);
    dispatch_float(dt, kSdpa, [&](auto tag) {
      using T = decltype(tag);
      T* kb = r.key_block.data<T>();
      for (int64_t b = 0; b < d.B; ++b)
        for (int64_t j = 0; j < d.S; ++j) {
          const bool ok =
              (!r.lengths || j < r.lengths[b]) && (!r.key_allowed || r.key_allowed[b * d.S + j]);
          kb[b * d.S + j] = ok ? T(0) : static_cast<T>(-kInf);
        }
    });
  }
  return r;
}

// The span [a, e) of a tile's keys klo .. klo+width-1 that row range [lo, hi] covers.
struct Span {
  int64_t a, e;
};
Span row_span(int64_t lo, int64_t hi, int64_t klo, int64_t width) {
  const int64_t a = std::clamp<int64_t>(lo - klo, 0, width);
  return {a, std::clamp<int64_t>(hi - klo + 1, a, width)};
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

// Row i of (b, h), keys klo .. klo+width-1 in s: inside the row's structural span (returned),
// -inf where a data part refuses the key, + the additive term elsewhere; outside the span s is
// left as it is (the caller zeroes P there), or set to -inf when fill_outside.
template <typename T>
Span mask_row(const RowMask& m, int64_t b, int64_t h, int64_t i, int64_t lo, int64_t hi,
              int64_t klo, int64_t width, int64_t S, T* s, bool fill_outside) {
  const Span sp = row_span(lo, hi, klo, width);
  if (fill_outside) {
    std::fill(s, s + sp.a, static_cast<T>(-kInf));
    std::fill(s + sp.e, s + width, static_cast<T>(-kInf));
  }
  if (m.key_block.defined()) {  // padding / lengths only: a select the compiler vectorises
    const T* kb = m.key_block.data<T>() + b * S + klo;
    for (int64_t j = sp.a; j < sp.e; ++j) s[j] = kb[j] == T(0) ? s[j] : kb[j];
    return sp;
  }
  if (!m.key_allowed && !m.lengths && !m.allowed && !m.additive) return sp;  // structure only
  const bool* ka = m.key_allowed ? m.key_allowed + b * S : nullptr;
  const int64_t len = m.lengths ? m.lengths[b] : S;
  const bool* al = nullptr;
  const double* ad = nullptr;
  int64_t alj = 0, adj = 0;
  if (m.allowed) {
    const Shape& st = m.allowed_st;
    al = m.allowed + b * st[0] + h * st[1] + i * st[2];
    alj = st[3];
  }
  if (m.additive) {
    const Shape& st = m.additive_st;
    ad = m.additive + b * st[0] + h * st[1] + i * st[2];
    adj = st[3];
  }
  for (int64_t j = sp.a; j < sp.e; ++j) {
    const int64_t kj = klo + j;
    if (kj >= len || (ka && !ka[kj]) || (al && !al[kj * alj]))
      s[j] = static_cast<T>(-kInf);
    else if (ad)
      s[j] = static_cast<T>(s[j] + ad[kj * adj]);
  }
  return sp;
}

// Everything forward and backward share. P and keep hold B·NH·per_bh elements (tile blocks) when
// backward will run; keep is undefined without dropout.
struct Ctx {
  Dims d;
  Plan plan;
  double scale = 1, p = 0;
  bool dropout = false;
  Tensor P, keep;
  AttentionMask mask;      // for the probe's dP (blocked entries read 0) and error messages
  bool mask_grad = false;  // the additive part requires grad: backward also returns dMask
  std::shared_ptr<AttentionProbe> probe;
};

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
                          b, h, c.mask.name()));
}

// Dense outputs of the forward, each null unless asked for.
template <typename T>
struct DenseOut {
  T* weights = nullptr;  // P after dropout
  T* scores = nullptr;   // probe: S with -inf where blocked
  T* probs = nullptr;    // probe: P before dropout
};

// ---- one (b, h)'s rows ----
// q (T, hs), k (S, hs), v (S, hs_v), output / dO (T, hs_v) and their gradients, as rows ld apart.
// In the default layout they are the tensors' own contiguous rows. With heads last, rows are
// NH·hs apart: used in place, except that K, V, dK and dV rows, which several row tiles read,
// go through contiguous per-head scratch (HeadRows). Measured (SDPA fwd+bwd, thread CPU time):
// heads last in place costs 4-5 % against the default layout with one tile, and 9 % / 19 %
// at (2, 8, 1024, 64) full / causal; with K, V copied 4-8 %.
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
// The same on the AVX-512 kernel (float32): kt is the head's K transposed (hs, S), packed once per
// head, vc its V rows (copied when strided far apart, see far_apart); Q rows are read in place.
struct Avx512Forward {
  const Ctx& c;
  Rows<const float> q;
  const float* kt;
  Rows<const float> vc;
  float* pack;      // B panels (cpu::attention_gemm_f32's scratch)
  const float* kb;  // padding / lengths only: this batch's key_block row (0 or -inf), selected here
  void scores(const Tile& t, float* Pt) const {
    cpu::attention_gemm_f32(t.rows(), t.width(), c.d.hs, static_cast<float>(c.scale), q.row(t.r0),
                            q.ld, 1, kt + t.klo, c.d.S, false, Pt, t.width(), pack, nullptr,
                            kb ? kb + t.klo : nullptr);
  }
  bool keys_masked() const { return kb != nullptr; }
  void values(const Tile& t, const float* Pv, Rows<float> o) const {
    cpu::attention_gemm_f32(t.rows(), c.d.hsv, t.width(), 1.f, Pv, t.width(), 1, vc.row(t.klo),
                            vc.ld, false, o.row(t.r0), o.ld);
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
    if (c.mask.errors_on_fully_masked()) throw_fully_masked(c, b, h, t.r0);
    for (int64_t r = 0; r < rows; ++r) std::fill_n(o.row(t.r0 + r), d.hsv, T(0));
    return;
  }
  prod.scores(t, Pt);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = t.r0 + r;
    T* s = Pt + r * width;
    // Only the row's structural span takes part: P = 0 outside it, as for keys outside the tile.
    const Span sp = prod.keys_masked() ? row_span(c.plan.lo[i], c.plan.hi[i], t.klo, width)
                                       : mask_row(rm, b, h, i, c.plan.lo[i], c.plan.hi[i], t.klo,
                                                  width, d.S, s, false);
    if (dense.scores)  // pre-filled with -inf
      std::copy(s + sp.a, s + sp.e, dense.scores + (bh * d.T + i) * d.S + t.klo + sp.a);
    // The softmax runs over the span widened to whole SIMD batches where the tile allows: the
    // widening's keys are structurally blocked (-inf, so P = 0 exactly), and the kernel then has
    // no scalar exp tail (which made causal rows, of every length, slower than full ones).
    const Span w = widen(sp, width);
    std::fill(s + w.a, s + sp.a, static_cast<T>(-kInf));
    std::fill(s + sp.e, s + w.e, static_cast<T>(-kInf));
    // the rule for fully masked and NaN rows: cpu::softmax_row (a NaN query gives a NaN row)
    if (!cpu::softmax_row(s + w.a, s + w.a, w.e - w.a) && c.mask.errors_on_fully_masked())
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

// Head (b, h)'s rows of operand `which` (n rows of w) in place.
template <typename P>
Rows<P> head_rows(const Dims& d, int which, P* x, int64_t b, int64_t h, int64_t n, int64_t w) {
  return {x + d.row(which, b, h, 0, n, w), d.ld(which, w)};
}
// Whether rows that the AVX-512 kernel reads as its B operand (row after row, once per block of A
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
  cpu::attention_transpose_f32(n, w, x + d.row(which, b, h, 0, n, w), d.ld(which, w), buf.data(),
                               n);
  return buf.data();
}

// The AVX-512 kernel's scratch. B panels: 64 columns by the longest inner dimension of a product
// whose B it may pack (hs, hs_v, a tile's rows, or a tile's width where K or V rows are read in
// place: far_apart keeps them in place only while they span <= 256 KiB, at least 1 KiB apart, so
// S <= 256). A blocks: the most rows of a product whose A it may pack (hs, hs_v, or a tile's width
// in the direct form, S <= kDirectKeys), rounded up to 6, by a tile's rows.
static_assert(kRowTileFull >= kRowTile && kRowTileFull >= 256, "pack_floats assumes it");
int64_t pack_floats(const Dims& d) { return 64 * std::max({d.hs, d.hsv, kRowTileFull}); }
int64_t apack_floats(const Dims& d) {
  return (std::max({d.hs, d.hsv, kDirectKeys}) + 5) / 6 * 6 * kRowTileFull;
}

// Products' flops (full T x S per head) below which the heads run serially: waking the pool costs
// microseconds, more with passive waiting (autograd/openmp_wait.hpp), and a tiny context (one
// sampled character) would spend more on that than on its heads.
constexpr int64_t kHeadsParallelFlops = int64_t(1) << 20;
// Calls body(scratch, b, h) for every head, each thread with its own Scratch (made by make()):
// in parallel over the heads (OpenMP, tg::set_num_threads) when `parallel`, there is more than
// one thread and head and the work reaches kHeadsParallelFlops; the heads write disjoint rows, so the result is the same bits at any thread
// count. Only for the AVX-512 kernel (BLAS must not run inside our parallel loops). An error
// thrown for a head is rethrown after the loop, the lowest (b, h)'s first, as the serial order.
template <typename Make, typename Body>
void for_heads(const Dims& d, bool parallel, Make make, Body body) {
  const int64_t n = d.B * d.NH;
  const int64_t flops = 2 * n * d.T * d.S * (d.hs + d.hsv);
  if (!parallel || n < 2 || flops < kHeadsParallelFlops || get_num_threads() < 2) {
    auto s = make();
    for (int64_t bh = 0; bh < n; ++bh) body(s, bh / d.NH, bh % d.NH);
    return;
  }
  std::exception_ptr err;
  int64_t err_at = n;
#pragma omp parallel
  {
    auto s = make();
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < n; ++bh) {
      try {
        body(s, bh / d.NH, bh % d.NH);
      } catch (...) {
#pragma omp critical(tg_sdpa_error)
        if (bh < err_at) err_at = bh, err = std::current_exception();
      }
    }
  }
  if (err) std::rethrow_exception(err);
}

// Whether the float32 products run on the AVX-512 kernel (else OpenBLAS).
template <typename T>
bool on_avx512() {
  return std::is_same_v<T, float> && cpu::simd_avx512();
}

template <typename T>
void sdpa_forward(const Ctx& c, const RowMask& rm, const T* q, const T* k, const T* v, T* o,
                  bool keep_all, const DenseOut<T>& dense) {
  const Dims& d = c.d;
  // Without a tape the P (and keep) tiles are scratch: one tile buffer reused.
  std::vector<T> scratch_k, scratch_pd;  // dropout: keep mask (without a tape), P ⊙ keep
  if (c.dropout) {
    scratch_pd.resize(c.plan.max_tile);
    if (!keep_all) scratch_k.resize(c.plan.max_tile);
  }
  // Dropout draws from the one generator in order, so with dropout and several threads the heads
  // stay serial, and the OpenBLAS path (which threads inside each GEMM) runs instead.
  if constexpr (std::is_same_v<T, float>)
    if (on_avx512<T>() && (!c.dropout || get_num_threads() < 2)) {
      struct Scratch {  // K transposed and V rows, once per head; P tiles without a tape
        std::vector<float> kt;
        HeadRows<float> vc;
        std::vector<float> pack, p;
      };
      const float* kb = rm.key_block.defined() ? rm.key_block.data<float>() : nullptr;
      for_heads(
          d, !c.dropout,
          [&] {
            return Scratch{
                {},
                HeadRows<float>(d, Dims::kV, d.S, d.hsv, far_apart(d, Dims::kV, d.S, d.hsv)),
                std::vector<float>(pack_floats(d)),
                std::vector<float>(keep_all ? 0 : c.plan.max_tile)};
          },
          [&](Scratch& s, int64_t b, int64_t h) {
            const Avx512Forward prod{c,
                                     head_rows(d, Dims::kQ, q, b, h, d.T, d.hs),
                                     transposed_rows(d, Dims::kK, k, b, h, d.S, d.hs, s.kt),
                                     s.vc.in(v, b, h, d.S, d.hsv),
                                     s.pack.data(),
                                     kb ? kb + b * d.S : nullptr};
            const Rows<float> oh = head_rows(d, Dims::kO, o, b, h, d.T, d.hsv);
            for (const Tile& t : c.plan.tiles) {
              const int64_t base = (b * d.NH + h) * c.plan.per_bh + t.off;
              float* Pt = keep_all ? c.P.data<float>() + base : s.p.data();
              float* Kt = !c.dropout ? nullptr
                          : keep_all ? c.keep.data<float>() + base
                                     : scratch_k.data();
              forward_tile(c, rm, b, h, t, prod, oh, Pt, Kt, scratch_pd.data(), dense);
            }
          });
      return;
    }
  std::vector<T> scratch_p(keep_all ? 0 : c.plan.max_tile);
  const bool reread = c.plan.tiles.size() > 1;  // K and V rows are read by several tiles
  HeadRows<T> hq(d, Dims::kQ, d.T, d.hs, false), hk(d, Dims::kK, d.S, d.hs, reread),
      hv(d, Dims::kV, d.S, d.hsv, reread), ho(d, Dims::kO, d.T, d.hsv, false);
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.NH; ++h) {
      const BlasForward<T> prod{c, hq.in(q, b, h, d.T, d.hs), hk.in(k, b, h, d.S, d.hs),
                                hv.in(v, b, h, d.S, d.hsv)};
      const Rows<T> oh = ho.out(o, b, h, d.T, d.hsv);
      for (const Tile& t : c.plan.tiles) {
        const int64_t base = (b * d.NH + h) * c.plan.per_bh + t.off;
        T* Pt = keep_all ? c.P.data<T>() + base : scratch_p.data();
        T* Kt = !c.dropout ? nullptr : keep_all ? c.keep.data<T>() + base : scratch_k.data();
        forward_tile(c, rm, b, h, t, prod, oh, Pt, Kt, scratch_pd.data(), dense);
      }
      ho.done(o, b, h, d.T, d.hsv);
    }
}

// Dense outputs of the backward for the probe, each null unless asked for.
template <typename T>
struct DenseGrad {
  T* dprobs = nullptr;
  T* dscores = nullptr;
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
// The same on the AVX-512 kernel (float32). Q and dO rows are read in place; kc holds K's rows
// (copied when strided far apart, see far_apart), vt V transposed (hs_v, S). With long key rows
// (S > kDirectKeys) dV and dK come out transposed, dVᵀ (hs_v, S) = dOᵀ·Pv and dKᵀ (hs, S) =
// scale·Qᵀ·dS accumulated over the tiles in dvt and dkt (the kernel then reads P and dS rows
// contiguously, not their columns 4 KiB apart) and transposed into the gradients once per head;
// with short ones they go to the gradients' rows directly (the transposes would cost more).
struct Avx512Backward {
  const Ctx& c;
  Rows<const float> q, g, kc;
  const float* vt;
  Rows<float> dq, dk, dv;
  float *dvt, *dkt;     // null: direct
  float *pack, *apack;  // cpu::attention_gemm_f32's scratch: B panels, A (dOᵀ, Qᵀ) blocks
  void dvalues(const Tile& t, const float* Pv, bool acc) const {
    if (!dvt)
      return cpu::attention_gemm_f32(t.width(), c.d.hsv, t.rows(), 1.f, Pv, 1, t.width(),
                                     g.row(t.r0), g.ld, acc, dv.row(t.klo), dv.ld, pack, apack);
    cpu::attention_gemm_f32(c.d.hsv, t.width(), t.rows(), 1.f, g.row(t.r0), 1, g.ld, Pv, t.width(),
                            acc, dvt + t.klo, c.d.S, pack, apack);
  }
  void dprobs(const Tile& t, float* dP) const {
    cpu::attention_gemm_f32(t.rows(), t.width(), c.d.hsv, 1.f, g.row(t.r0), g.ld, 1, vt + t.klo,
                            c.d.S, false, dP, t.width(), pack);
  }
  void dqueries(const Tile& t, const float* dS) const {
    cpu::attention_gemm_f32(t.rows(), c.d.hs, t.width(), static_cast<float>(c.scale), dS, t.width(),
                            1, kc.row(t.klo), kc.ld, false, dq.row(t.r0), dq.ld);
  }
  void dkeys(const Tile& t, const float* dS, bool acc) const {
    const float sc = static_cast<float>(c.scale);
    if (!dkt)
      return cpu::attention_gemm_f32(t.width(), c.d.hs, t.rows(), sc, dS, 1, t.width(), q.row(t.r0),
                                     q.ld, acc, dk.row(t.klo), dk.ld, pack, apack);
    cpu::attention_gemm_f32(c.d.hs, t.width(), t.rows(), sc, q.row(t.r0), 1, q.ld, dS, t.width(),
                            acc, dkt + t.klo, c.d.S, pack, apack);
  }
};

// Backward of one tile of one (b, h) (the products read and write that head's rows): dV, dP, dS,
// dQ, dK.
template <typename T, typename Prod>
void backward_tile(const Ctx& c, const RowMask& rm, int64_t b, int64_t h, const Tile& t,
                   const Prod& prod, Rows<T> dq, T* Pd, T* dP, const DenseGrad<T>& dense) {
  const Dims& d = c.d;
  const int64_t bh = b * d.NH + h, rows = t.rows(), width = t.width();
  if (width == 0) {  // no key: dQ rows 0
    for (int64_t r = 0; r < rows; ++r) std::fill_n(dq.row(t.r0 + r), d.hs, T(0));
    return;
  }
  const int64_t base = bh * c.plan.per_bh + t.off;
  const T* Pt = c.P.data<T>() + base;
  const T* Kt = c.dropout ? c.keep.data<T>() + base : nullptr;
  const T* Pv = Pt;
  if (Kt) {
    for (int64_t e = 0; e < rows * width; ++e) Pd[e] = Pt[e] * Kt[e];
    Pv = Pd;
  }
  // dK and dV accumulate over tiles; the first one sets them when it spans every key
  const bool acc = !(&t == &c.plan.tiles.front() && c.plan.first_spans_all);
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
      mask_row(rm, b, h, i, c.plan.lo[i], c.plan.hi[i], t.klo, width, d.S, blocked.data(), true);
      T* out = dense.dprobs + (bh * d.T + i) * d.S + t.klo;
      for (int64_t j = 0; j < width; ++j) out[j] = std::isinf(blocked[j]) ? T(0) : dp[j];
    }
    // dS over the row's structural span (P = 0, hence dS = 0, outside it, as in the forward)
    const Span sp = row_span(c.plan.lo[i], c.plan.hi[i], t.klo, width);
    cpu::softmax_backward_row(dp + sp.a, dp + sp.a, p + sp.a, sp.e - sp.a);
    std::fill(dp, dp + sp.a, T(0));
    std::fill(dp + sp.e, dp + width, T(0));
  }
  if (dense.dscores) scatter_tile(dense.dscores, dP, d, bh, t);
  prod.dqueries(t, dP);
  prod.dkeys(t, dP, acc);
}

std::vector<Tensor> sdpa_backward(const Ctx& c, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& g) {
  const Dims& d = c.d;
  // Every tile writes its dQ rows. dK and dV accumulate over tiles, from 0 unless the first tile
  // spans every key; on AVX-512, and on OpenBLAS with heads last and several tiles, they accumulate
  // in per-head scratch, copied out whole.
  const bool reread = c.plan.tiles.size() > 1;  // K, V, dK, dV rows serve several tiles
  const bool avx512 = q.dtype() == kFloat32 && on_avx512<float>();
  const bool direct = d.S <= kDirectKeys;  // AVX-512: dV and dK straight to the gradient rows
  const bool zero_kv = !c.plan.first_spans_all,
             kv_scratch = avx512 ? !direct : d.heads_last && reread;
  auto grad_for = [&](const Tensor& x) {
    return zero_kv && !kv_scratch ? zeros(x.shape(), x.dtype())
                                  : Tensor::empty(x.shape(), x.dtype());
  };
  // Packed: q, k and v (or k and v) are one tensor, and so are their gradients (at its offsets).
  const bool qkv = d.packing == Dims::kQKV, kv = d.packing == Dims::kKV;
  Tensor dq = qkv ? grad_for(q) : Tensor::empty(q.shape(), q.dtype());
  Tensor dk = qkv ? dq : grad_for(k), dv = qkv ? dq : kv ? dk : grad_for(v);
  // dS, the gradient of the scores scale·QKᵀ + mask, dense for the probe and for dMask.
  Tensor dprobs, dscores;
  const bool probe = c.probe && c.probe->on_backward;
  if (probe) dprobs = zeros({d.B, d.NH, d.T, d.S}, q.dtype());
  if (probe || c.mask_grad) dscores = zeros({d.B, d.NH, d.T, d.S}, q.dtype());
  const RowMask rm = make_row_mask(c.mask, d, q.dtype());
  dispatch_float(q.dtype(), kSdpa, [&](auto tag) {
    using T = decltype(tag);
    DenseGrad<T> dense;
    if (dprobs.defined()) dense.dprobs = dprobs.data<T>();
    if (dscores.defined()) dense.dscores = dscores.data<T>();
    T *pdq = dq.data<T>(), *pdk = dk.data<T>(), *pdv = dv.data<T>();
    if constexpr (std::is_same_v<T, float>)
      if (avx512) {  // V transposed (and K packed where strided far apart), once per head
        struct Scratch {
          HeadRows<float> kc;
          std::vector<float> vt, dvt, dkt, pack, apack, Pd, dP;
        };
        const float *pq = q.data<float>(), *pk = k.data<float>(), *pv = v.data<float>(),
                    *pg = g.data<float>();
        for_heads(
            d, true,
            [&] {
              return Scratch{
                  HeadRows<float>(d, Dims::kK, d.S, d.hs, far_apart(d, Dims::kK, d.S, d.hs)),
                  {},
                  std::vector<float>(direct ? 0 : d.hsv * d.S),
                  std::vector<float>(direct ? 0 : d.hs * d.S),
                  std::vector<float>(pack_floats(d)),
                  std::vector<float>(apack_floats(d)),
                  std::vector<float>(c.dropout ? c.plan.max_tile : 0),
                  std::vector<float>(c.plan.max_tile)};
            },
            [&](Scratch& s, int64_t b, int64_t h) {
              const Rows<float> dqh = head_rows(d, Dims::kQ, pdq, b, h, d.T, d.hs),
                                dkh = head_rows(d, Dims::kK, pdk, b, h, d.S, d.hs),
                                dvh = head_rows(d, Dims::kV, pdv, b, h, d.S, d.hsv);
              const Avx512Backward prod{c,
                                        head_rows(d, Dims::kQ, pq, b, h, d.T, d.hs),
                                        head_rows(d, Dims::kO, pg, b, h, d.T, d.hsv),
                                        s.kc.in(pk, b, h, d.S, d.hs),
                                        transposed_rows(d, Dims::kV, pv, b, h, d.S, d.hsv, s.vt),
                                        dqh,
                                        dkh,
                                        dvh,
                                        direct ? nullptr : s.dvt.data(),
                                        direct ? nullptr : s.dkt.data(),
                                        s.pack.data(),
                                        s.apack.data()};
              if (zero_kv && !direct) {
                std::fill(s.dvt.begin(), s.dvt.end(), 0.f);
                std::fill(s.dkt.begin(), s.dkt.end(), 0.f);
              }
              for (const Tile& t : c.plan.tiles)
                backward_tile(c, rm, b, h, t, prod, dqh, s.Pd.data(), s.dP.data(), dense);
              if (direct) return;
              cpu::attention_transpose_f32(d.hsv, d.S, s.dvt.data(), d.S, dvh.p, dvh.ld);
              cpu::attention_transpose_f32(d.hs, d.S, s.dkt.data(), d.S, dkh.p, dkh.ld);
            });
        return;
      }
    std::vector<T> Pd(c.dropout ? c.plan.max_tile : 0), dP(c.plan.max_tile);
    HeadRows<T> hq(d, Dims::kQ, d.T, d.hs, false), hk(d, Dims::kK, d.S, d.hs, reread),
        hv(d, Dims::kV, d.S, d.hsv, reread), hg(d, Dims::kO, d.T, d.hsv, false),
        hdq(d, Dims::kQ, d.T, d.hs, false), hdk(d, Dims::kK, d.S, d.hs, reread),
        hdv(d, Dims::kV, d.S, d.hsv, reread);
    for (int64_t b = 0; b < d.B; ++b)
      for (int64_t h = 0; h < d.NH; ++h) {
        const BlasBackward<T> prod{c,
                                   hq.in(q.data<T>(), b, h, d.T, d.hs),
                                   hk.in(k.data<T>(), b, h, d.S, d.hs),
                                   hv.in(v.data<T>(), b, h, d.S, d.hsv),
                                   hg.in(g.data<T>(), b, h, d.T, d.hsv),
                                   hdq.out(pdq, b, h, d.T, d.hs),
                                   hdk.out(pdk, b, h, d.S, d.hs),
                                   hdv.out(pdv, b, h, d.S, d.hsv)};
        if (zero_kv && kv_scratch) {
          std::fill(hdk.buf.begin(), hdk.buf.end(), T(0));
          std::fill(hdv.buf.begin(), hdv.buf.end(), T(0));
        }
        for (const Tile& t : c.plan.tiles)
          backward_tile(c, rm, b, h, t, prod, prod.dq, Pd.data(), dP.data(), dense);
        hdq.done(pdq, b, h, d.T, d.hs);
        hdk.done(pdk, b, h, d.S, d.hs);
        hdv.done(pdv, b, h, d.S, d.hsv);
      }
  });
  if (dprobs.defined()) c.probe->on_backward(dprobs, dscores);
  std::vector<Tensor> out{dq};
  if (!qkv) out.push_back(dk);
  if (!qkv && !kv) out.push_back(dv);
  if (c.mask_grad) {  // dMask = dS summed over the mask's broadcast dims, in the mask's dtype
    const Tensor& am = c.mask.additive_;
    out.push_back(sum_to(dscores, am.shape()).to(am.dtype()));
  }
  return out;
}

double default_scale(const SDPAOptions& opts, int64_t hs) {
  return opts.scale ? *opts.scale : (hs > 0 ? 1.0 / std::sqrt(static_cast<double>(hs)) : 1.0);
}

// The fused CPU path, after the checks: q, k, v are the inputs (one tensor three times, or k and v
// one tensor twice, when packed); the tape node differentiates `inputs`.
AttentionResult sdpa_cpu(const Dims& dims, const Tensor& q, const Tensor& k, const Tensor& v,
                         const std::vector<Tensor>& inputs, const AttentionMask& mask,
                         const SDPAOptions& opts) {
  auto c = std::make_shared<Ctx>();
  c->d = dims;
  const Dims& d = c->d;
  c->plan = make_plan(mask, d.T, d.S);
  c->scale = default_scale(opts, d.hs);
  c->dropout = opts.training && opts.dropout_p > 0;
  c->p = c->dropout ? opts.dropout_p : 0.0;
  c->mask = mask;
  if (opts.probe) c->probe = std::make_shared<AttentionProbe>(*opts.probe);
  // A differentiable additive mask is one more input of the tape node.
  c->mask_grad = mask.additive_.defined() && mask.additive_.requires_grad() && grad_enabled();
  std::vector<Tensor> node_inputs = inputs;
  if (c->mask_grad) node_inputs.push_back(mask.additive_);
  const bool rec = needs_record({&q, &k, &v}) || c->mask_grad;
  if (rec) {
    c->P = Tensor::empty({d.B * d.NH * c->plan.per_bh}, q.dtype());
    if (c->dropout) c->keep = Tensor::empty({d.B * d.NH * c->plan.per_bh}, q.dtype());
  }
  AttentionResult res;
  // every tile writes its rows
  res.output = Tensor::empty(
      d.heads_last ? Shape{d.B, d.T, d.NH, d.hsv} : Shape{d.B, d.NH, d.T, d.hsv}, q.dtype());
  const Shape dense_shape{d.B, d.NH, d.T, d.S};
  if (opts.need_weights) res.weights = zeros(dense_shape, q.dtype());
  Tensor scores, probs;
  if (c->probe && c->probe->on_forward) {
    scores = full(dense_shape, -kInf, q.dtype());
    probs = zeros(dense_shape, q.dtype());
  }
  const RowMask rm = make_row_mask(mask, d, q.dtype());
  dispatch_float(q.dtype(), kSdpa, [&](auto tag) {
    using T = decltype(tag);
    DenseOut<T> dense;
    if (res.weights.defined()) dense.weights = res.weights.data<T>();
    if (scores.defined()) dense.scores = scores.data<T>(), dense.probs = probs.data<T>();
    sdpa_forward<T>(*c, rm, q.data<T>(), k.data<T>(), v.data<T>(), res.output.data<T>(), rec,
                    dense);
  });
  if (scores.defined()) c->probe->on_forward(scores, probs);
  if (rec) {
    std::shared_ptr<const Ctx> cc = c;
    // Cost model per (query, key) pair the kernel computes (each tile's key range: causal and
    // local masks compute fewer than T·S): forward QKᵀ 2·hs, softmax ~5, P·V 2·hs_v; backward
    // dV and dP 2·hs_v each, softmax ~3, dQ and dK 2·hs each.
    const double pairs = static_cast<double>(d.B) * d.NH * c->plan.per_bh;
    // anomaly reports: output/dq rows are (b, h, t), or (b, t, h) with heads last (packed: the
    // output's only; d(qkv) falls back to indices)
    const char* rows = d.packing == Dims::kQKV  ? "b,t,h"
                       : d.packing == Dims::kKV ? "b,t,h|b,t,h"
                       : d.heads_last           ? "b,t,h|b,t,h|b,s,h|b,s,h"
                                                : "b,h,t|b,h,t|b,h,s|b,h,s";
    RecordInfo info =
        RecordInfo()
            .flops(pairs * (2.0 * d.hs + 2.0 * d.hsv + 5), pairs * (4.0 * d.hs + 4.0 * d.hsv + 3))
            .rows(3, rows);
    if (d.packing == Dims::kQKV)
      info.saved(q, c->P, c->keep);
    else if (d.packing == Dims::kKV)
      info.saved(q, k, c->P, c->keep);
    else
      info.saved(q, k, v, c->P, c->keep);
    record(kSdpa, res.output, node_inputs, info,
           [cc, qd = q.detach(), kd = k.detach(), vd = v.detach()](const Tensor& g)
               -> std::vector<Tensor> { return sdpa_backward(*cc, qd, kd, vd, g); });
  }
  return res;
}

}  // namespace

// The weights tensor (need_weights) is an output only: it carries no gradient (the tape node
// differentiates `output`). Differentiate through weights with the dense reference if needed.
AttentionResult scaled_dot_product_attention(const Tensor& q_in, const Tensor& k_in,
                                             const Tensor& v_in, const AttentionMask& mask,
                                             const SDPAOptions& opts, Site site) {
  SiteScope scope(site);
  const Tensor q = contig(q_in);
  const Tensor k = contig(k_in);
  const Tensor v = contig(v_in);
  const Dims d = check_sdpa(q, k, v, mask, opts);
  if (q.device().is_cuda()) {
    const double scale = default_scale(opts, d.hs);
    if (!d.heads_last) return cuda_sdpa(q, k, v, mask, opts, scale);
    // The CUDA kernels read (B, NH, T, hs): transpose there and back (recorded copies).
    AttentionResult r =
        cuda_sdpa(transpose(q, 1, 2), transpose(k, 1, 2), transpose(v, 1, 2), mask, opts, scale);
    r.output = transpose(r.output, 1, 2);
    return r;
  }
  return sdpa_cpu(d, q, k, v, {q, k, v}, mask, opts);
}

AttentionResult scaled_dot_product_attention_packed(const Tensor& qkv_in, const AttentionMask& mask,
                                                    const SDPAOptions& opts, Site site) {
  SiteScope scope(site);
  const Tensor qkv = contig(qkv_in);
  check_float(qkv, kSdpa, "qkv", true);
  if (qkv.dim() != 5 || qkv.size(2) != 3)
    throw Error(fmt::format("{}: qkv {}: expected (B, T, 3, NH, hs), q, k, v for every position",
                            kSdpa, shape_str(qkv.shape())));
  const int64_t B = qkv.size(0), T = qkv.size(1), NH = qkv.size(3), hs = qkv.size(4);
  if (qkv.device().is_cuda()) {  // three heads-last views (recorded copies) for the CUDA path
    SDPAOptions o = opts;
    o.heads_last = true;
    auto part = [&](int64_t i) { return reshape(narrow(qkv, 2, i, 1), {B, T, NH, hs}); };
    return scaled_dot_product_attention(part(0), part(1), part(2), mask, o);
  }
  SDPAOptions o = opts;
  o.heads_last = true;
  Dims d{B, NH, T, T, hs, hs, true};
  d.packing = Dims::kQKV;
  check_options(d, mask, o, fmt::format("qkv {}", shape_str(qkv.shape())), qkv.device());
  return sdpa_cpu(d, qkv, qkv, qkv, {qkv}, mask, o);
}

AttentionResult scaled_dot_product_attention_kv_packed(const Tensor& q_in, const Tensor& kv_in,
                                                       const AttentionMask& mask,
                                                       const SDPAOptions& opts, Site site) {
  SiteScope scope(site);
  const Tensor q = contig(q_in);
  const Tensor kv = contig(kv_in);
  check_float(q, kSdpa, "q", true);
  check_float(kv, kSdpa, "kv", true);
  const std::string shapes =
      fmt::format("q {}, kv {}", shape_str(q.shape()), shape_str(kv.shape()));
  if (q.dim() != 4 || kv.dim() != 5 || kv.size(2) != 2)
    throw Error(
        fmt::format("{}: {}: expected q (B, T, NH, hs) and kv (B, S, 2, NH, hs)", kSdpa, shapes));
  check_same_dtype(q, kv, kSdpa, "q", "kv");
  if (kv.size(0) != q.size(0) || kv.size(3) != q.size(2) || kv.size(4) != q.size(3))
    throw Error(fmt::format("{}: {}: B, NH and hs of q and kv differ", kSdpa, shapes));
  if (q.device() != kv.device())
    throw Error(fmt::format("{}: {}: q is on {}, kv on {}; move them to one device", kSdpa, shapes,
                            q.device().str(), kv.device().str()));
  const int64_t B = q.size(0), T = q.size(1), NH = q.size(2), hs = q.size(3), S = kv.size(1);
  SDPAOptions o = opts;
  o.heads_last = true;
  if (q.device().is_cuda()) {  // two heads-last views (recorded copies) for the CUDA path
    auto part = [&](int64_t i) { return reshape(narrow(kv, 2, i, 1), {B, S, NH, hs}); };
    return scaled_dot_product_attention(q, part(0), part(1), mask, o);
  }
  Dims d{B, NH, T, S, hs, hs, true};
  d.packing = Dims::kKV;
  check_options(d, mask, o, shapes, q.device());
  return sdpa_cpu(d, q, kv, kv, {q, kv}, mask, o);
}

}  // namespace tg
