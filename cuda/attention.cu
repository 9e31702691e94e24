// cuda/attention.cu — fused scaled-dot-product attention on the GPU, FlashAttention-2 style, for
// F32 and F64: attention_forward (o and lse) and attention_backward (dq, dk, dv), with every part
// of MaskDesc. Never a T×S buffer: the extra memory is the per-row key ranges (plan), and lse / D.
//
// One source of truth for the structural mask: plan_kernel evaluates AttentionMask::key_range
// (ops/attention_mask.cpp) per query row into row_lo/row_hi, and per query tile of BR rows the
// union [tile_lo, tile_hi]. Key tiles outside a query tile's union are never visited (causal,
// local and blocked masks cost only their band); inside a visited tile every entry (i, j) is
// checked: j in [row_lo(i), row_hi(i)], the key flags (padding, lengths, j < S, loaded once per
// key tile) and the per-entry bool / additive parts.
//
// Kernels (256 threads = 16 × 16; tx = threadIdx % 16 walks columns, ty rows; a thread owns rows
// ty + 16a and columns tx + 16b of every tile; shared tiles are row-major with an odd row stride,
// so every shared read is a broadcast or conflict-free):
//   fwd_kernel   one block per (b, h, query tile): online softmax over key tiles (running max m
//                and sum l per row), O in registers; o = acc / l, lse = m + log l.
//   dot_kernel   D_i = Σ dO_i·O_i (double accumulation), one warp per row.
//   dq_kernel    one block per (b, h, query tile): dQ = scale · Σ_tiles dS·K, recomputing P.
//   dkv_kernel   one block per (b, h, key tile): over the query tiles that see it, dV += Pᵀ·dO,
//                dK += scale · dSᵀ·Q. No atomics: deterministic.
// Masked entries and rows with no allowed key get P = 0 and dS = 0 (output 0, lse = -inf, zero
// gradient). Scores follow the CPU: s = scale·(q·k) (+ additive); -inf entries take no part;
// NaN / +inf scores make the row NaN, as in the CPU's softmax.
// Deliberately not here: dropout, need_weights and probes (ops/ takes the CPU path for those),
// tensor cores (F32 stays IEEE float32 SIMT, so parity with the CPU is float rounding only).
#include "cuda/check.cuh"

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace tg::cuda {
namespace {

constexpr int kThreads = 256;  // every tile kernel: 16 × 16 threads

// ---- per-type device math (float and double overloads) ----
__device__ __forceinline__ float d_exp(float x) { return expf(x); }
__device__ __forceinline__ double d_exp(double x) { return exp(x); }
__device__ __forceinline__ float d_log(float x) { return logf(x); }
__device__ __forceinline__ double d_log(double x) { return log(x); }
__device__ __forceinline__ float d_max(float a, float b) { return fmaxf(a, b); }  // skips NaN
__device__ __forceinline__ double d_max(double a, double b) { return fmax(a, b); }
template <typename scalar_t>
__device__ __forceinline__ scalar_t neg_inf() {
  return -static_cast<scalar_t>(INFINITY);
}
__device__ __forceinline__ int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ __forceinline__ int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

// Max / sum over the 16 lanes that share a row (lane bits 0-3; both half-warps reduce at once).
template <typename scalar_t>
__device__ __forceinline__ scalar_t group16_max(scalar_t v) {
#pragma unroll
  for (int off = 8; off > 0; off >>= 1) v = d_max(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
template <typename scalar_t>
__device__ __forceinline__ scalar_t group16_sum(scalar_t v) {
#pragma unroll
  for (int off = 8; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// ---- tile shapes ----
// D: the head size padded to 32 / 64 / 128 (q/k and v share it); BR query rows and BC keys per
// tile; LD / LP the shared row strides of the (rows, D) and (BR, BC) tiles.
template <typename scalar_t, int D>
struct Cfg {
  static constexpr int BR = (sizeof(scalar_t) == 8 && D == 128) ? 32 : 64;
  static constexpr int BC = D == 128 ? 32 : 64;
  static constexpr int LD = D + 1, LP = BC + 1;
  static constexpr int TM = BR / 16, TN = BC / 16, TD = D / 16;  // per thread
};

// ---- the structural mask ----
__device__ int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// AttentionMask::key_range, exactly: the inclusive key range [lo, hi] of query row i.
__device__ void key_range(const MaskDesc& m, int64_t i, int64_t S, int64_t& lo, int64_t& hi) {
  lo = 0;
  hi = S - 1;
  const int64_t ip = i + m.shift;
  if (m.causal) hi = imin(hi, ip);
  if (m.has_local) {
    lo = imax(lo, ip - m.left);
    hi = imin(hi, ip + m.right);
  }
  for (int k = 0; k < m.n_blocked; ++k) {
    const int64_t W = m.block_W[k], blk = floor_div(ip, W);
    lo = imax(lo, (blk - m.block_back[k]) * W);
    hi = imin(hi, (blk + m.block_ahead[k] + 1) * W - 1);
    if (m.block_causal[k]) hi = imin(hi, ip);
  }
}

// One block of BR threads per query tile: row_lo/row_hi (T) per row, and tile_lo/tile_hi the union
// of the tile's non-empty rows (lo = S, hi = -1 when every row is empty).
template <int BR>
__global__ void __launch_bounds__(BR)
    plan_kernel(int64_t* row_lo, int64_t* row_hi, int64_t* tile_lo, int64_t* tile_hi, MaskDesc m,
                int64_t T, int64_t S) {
  __shared__ int64_t slo[BR], shi[BR];
  const int t = threadIdx.x;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * BR + t;
  int64_t lo = S, hi = -1;
  if (i < T) {
    key_range(m, i, S, lo, hi);
    row_lo[i] = lo;
    row_hi[i] = hi;
    if (lo > hi) lo = S, hi = -1;
  }
  slo[t] = lo;
  shi[t] = hi;
  __syncthreads();
  if (t == 0) {
    for (int r = 1; r < BR; ++r) {
      lo = imin(lo, slo[r]);
      hi = imax(hi, shi[r]);
    }
    tile_lo[blockIdx.x] = lo;
    tile_hi[blockIdx.x] = hi;
  }
}

// ---- shared-memory tiles ----
// dst[r][c] (row stride D + 1) = src[(row0 + r)·width + c] for row0 + r < nrows and c < width, else
// 0.
template <typename scalar_t, int D, int ROWS>
__device__ void load_rows(scalar_t* dst, const scalar_t* src, int64_t row0, int64_t nrows,
                          int width) {
  for (int e = threadIdx.x; e < ROWS * D; e += kThreads) {
    const int r = e / D, c = e % D;
    const int64_t row = row0 + r;
    dst[r * (D + 1) + c] = (row < nrows && c < width) ? src[row * width + c] : scalar_t(0);
  }
}

// Per key c0 + c of the tile: allowed by the key-only parts (j < S, padding, lengths)?
template <int BC>
__device__ void load_key_ok(int* kok, const MaskDesc& m, int64_t b, int64_t c0, int64_t S) {
  for (int c = threadIdx.x; c < BC; c += kThreads) {
    const int64_t j = c0 + c;
    bool ok = j < S;
    if (ok && m.key_allowed) ok = m.key_allowed[b * S + j];
    if (ok && m.key_lengths) ok = j < m.key_lengths[b];
    kok[c] = ok;
  }
}

// Per query row r0 + r of the tile: its key range (empty past T).
template <int BR>
__device__ void load_row_ranges(int64_t* rlo, int64_t* rhi, const int64_t* row_lo,
                                const int64_t* row_hi, int64_t r0, int64_t T) {
  for (int r = threadIdx.x; r < BR; r += kThreads) {
    const int64_t i = r0 + r;
    rlo[r] = i < T ? row_lo[i] : 1;
    rhi[r] = i < T ? row_hi[i] : 0;
  }
}

// ---- register-tiled products over shared tiles (rows ra = ty + 16a, columns cb = tx + 16b) ----
// acc[a][b] = Σ_k A[ra][k]·B[cb][k], k < NK (A·Bᵀ: scores, dP).
template <typename scalar_t, int NA, int NB, int NK>
__device__ __forceinline__ void mm_nt(scalar_t (&acc)[NA][NB], const scalar_t* A, int lda,
                                      const scalar_t* B, int ldb, int ty, int tx) {
#pragma unroll
  for (int a = 0; a < NA; ++a)
#pragma unroll
    for (int b = 0; b < NB; ++b) acc[a][b] = scalar_t(0);
#pragma unroll 4
  for (int k = 0; k < NK; ++k) {
    scalar_t av[NA], bv[NB];
#pragma unroll
    for (int a = 0; a < NA; ++a) av[a] = A[(ty + 16 * a) * lda + k];
#pragma unroll
    for (int b = 0; b < NB; ++b) bv[b] = B[(tx + 16 * b) * ldb + k];
#pragma unroll
    for (int a = 0; a < NA; ++a)
#pragma unroll
      for (int b = 0; b < NB; ++b) acc[a][b] += av[a] * bv[b];
  }
}
// acc[a][b] += Σ_x A[ra][x]·B[x][cb], x < NX (A·B: P·V, dS·K).
template <typename scalar_t, int NA, int NB, int NX>
__device__ __forceinline__ void mm_nn(scalar_t (&acc)[NA][NB], const scalar_t* A, int lda,
                                      const scalar_t* B, int ldb, int ty, int tx) {
#pragma unroll 4
  for (int x = 0; x < NX; ++x) {
    scalar_t av[NA], bv[NB];
#pragma unroll
    for (int a = 0; a < NA; ++a) av[a] = A[(ty + 16 * a) * lda + x];
#pragma unroll
    for (int b = 0; b < NB; ++b) bv[b] = B[x * ldb + tx + 16 * b];
#pragma unroll
    for (int a = 0; a < NA; ++a)
#pragma unroll
      for (int b = 0; b < NB; ++b) acc[a][b] += av[a] * bv[b];
  }
}
// acc[a][b] += Σ_x A[x][ra]·B[x][cb], x < NX (Aᵀ·B: Pᵀ·dO, dSᵀ·Q).
template <typename scalar_t, int NA, int NB, int NX>
__device__ __forceinline__ void mm_tn(scalar_t (&acc)[NA][NB], const scalar_t* A, int lda,
                                      const scalar_t* B, int ldb, int ty, int tx) {
#pragma unroll 4
  for (int x = 0; x < NX; ++x) {
    scalar_t av[NA], bv[NB];
#pragma unroll
    for (int a = 0; a < NA; ++a) av[a] = A[x * lda + ty + 16 * a];
#pragma unroll
    for (int b = 0; b < NB; ++b) bv[b] = B[x * ldb + tx + 16 * b];
#pragma unroll
    for (int a = 0; a < NA; ++a)
#pragma unroll
      for (int b = 0; b < NB; ++b) acc[a][b] += av[a] * bv[b];
  }
}

// Scores of rows r0 + ra, keys c0 + cb from the raw dot products s: scale·s (+ additive) where
// the entry is allowed, -inf where it is not.
template <typename scalar_t, int TM, int TN, int BC>
__device__ void mask_scores(scalar_t (&s)[TM][TN], const MaskDesc& m, const int64_t* rlo,
                            const int64_t* rhi, const int* kok, int64_t b, int64_t h, int64_t r0,
                            int64_t c0, scalar_t scale, int ty, int tx) {
  const scalar_t* add = static_cast<const scalar_t*>(m.additive);
#pragma unroll
  for (int a = 0; a < TM; ++a) {
    const int ra = ty + 16 * a;
    const int64_t i = r0 + ra;
    // the row's range relative to c0, clamped to the tile: allowed columns are [cl, ch)
    const int64_t cl = imin(imax(rlo[ra] - c0, 0), BC);
    const int64_t ch = imin(imax(rhi[ra] - c0 + 1, cl), BC);
#pragma unroll
    for (int bb = 0; bb < TN; ++bb) {
      const int cb = tx + 16 * bb;
      const int64_t j = c0 + cb;
      bool ok = cb >= cl && cb < ch && kok[cb];
      if (ok && m.allowed)
        ok = m.allowed[b * m.allowed_stride[0] + h * m.allowed_stride[1] + i * m.allowed_stride[2] +
                       j * m.allowed_stride[3]];
      scalar_t v = s[a][bb] * scale;
      if (ok && add)
        v += add[b * m.additive_stride[0] + h * m.additive_stride[1] + i * m.additive_stride[2] +
                 j * m.additive_stride[3]];
      s[a][bb] = ok ? v : neg_inf<scalar_t>();
    }
  }
}

// Shared-memory bytes of each kernel (int64 arrays first, then scalar tiles, then int flags).
template <typename scalar_t, int D>
constexpr size_t fwd_smem() {
  using C = Cfg<scalar_t, D>;
  return 2 * C::BR * sizeof(int64_t) +
         (C::BR * C::LD + 2 * C::BC * C::LD + C::BR * C::LP) * sizeof(scalar_t) +
         C::BC * sizeof(int);
}
template <typename scalar_t, int D>
constexpr size_t dq_smem() {
  using C = Cfg<scalar_t, D>;
  return 2 * C::BR * sizeof(int64_t) +
         (2 * C::BR * C::LD + 2 * C::BC * C::LD + C::BR * C::LP) * sizeof(scalar_t) +
         C::BC * sizeof(int);
}
template <typename scalar_t, int D>
constexpr size_t dkv_smem() {
  using C = Cfg<scalar_t, D>;
  return 2 * C::BR * sizeof(int64_t) +
         (2 * C::BR * C::LD + 2 * C::BC * C::LD + 2 * C::BR * C::LP + 2 * C::BR) *
             sizeof(scalar_t) +
         C::BC * sizeof(int);
}

// Sizes every kernel reads.
struct Dims {
  int64_t BH, NH, T, S;
  int hs, hsv;
};

// ---- forward ----
// Block: (b, h, query tile qt), heaviest (last) query tiles first. o (B, NH, T, hs_v), lse
// (B, NH, T).
template <typename scalar_t, int D>
__global__ void __launch_bounds__(kThreads)
    fwd_kernel(scalar_t* o, scalar_t* lse, const scalar_t* q, const scalar_t* k, const scalar_t* v,
               const int64_t* row_lo, const int64_t* row_hi, const int64_t* tile_lo,
               const int64_t* tile_hi, Dims d, scalar_t scale, MaskDesc m) {
  using C = Cfg<scalar_t, D>;
  constexpr int BR = C::BR, BC = C::BC, LD = C::LD, LP = C::LP;
  constexpr int TM = C::TM, TN = C::TN, TD = C::TD;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  int64_t* rlo = reinterpret_cast<int64_t*>(smem_raw);
  int64_t* rhi = rlo + BR;
  scalar_t* Qs = reinterpret_cast<scalar_t*>(rhi + BR);
  scalar_t* Ks = Qs + BR * LD;
  scalar_t* Vs = Ks + BC * LD;
  scalar_t* Ps = Vs + BC * LD;
  int* kok = reinterpret_cast<int*>(Ps + BR * LP);

  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t nqt = (d.T + BR - 1) / BR;
  const int64_t bh = blockIdx.x % d.BH, qt = nqt - 1 - blockIdx.x / d.BH;
  const int64_t b = bh / d.NH, h = bh % d.NH, r0 = qt * BR;
  const scalar_t* kb = k + bh * d.S * d.hs;
  const scalar_t* vb = v + bh * d.S * d.hsv;
  load_rows<scalar_t, D, BR>(Qs, q + bh * d.T * d.hs, r0, d.T, d.hs);
  load_row_ranges<BR>(rlo, rhi, row_lo, row_hi, r0, d.T);

  scalar_t acc[TM][TD], m_run[TM], l_part[TM];  // l_part: this thread's columns only
#pragma unroll
  for (int a = 0; a < TM; ++a) {
    m_run[a] = neg_inf<scalar_t>();
    l_part[a] = 0;
#pragma unroll
    for (int c = 0; c < TD; ++c) acc[a][c] = 0;
  }
  const int64_t khi = tile_hi[qt];
  for (int64_t c0 = tile_lo[qt] / BC * BC; c0 <= khi; c0 += BC) {
    load_rows<scalar_t, D, BC>(Ks, kb, c0, d.S, d.hs);
    load_rows<scalar_t, D, BC>(Vs, vb, c0, d.S, d.hsv);
    load_key_ok<BC>(kok, m, b, c0, d.S);
    __syncthreads();
    scalar_t s[TM][TN];
    mm_nt<scalar_t, TM, TN, D>(s, Qs, LD, Ks, LD, ty, tx);
    mask_scores<scalar_t, TM, TN, BC>(s, m, rlo, rhi, kok, b, h, r0, c0, scale, ty, tx);
#pragma unroll
    for (int a = 0; a < TM; ++a) {  // online softmax: new max, rescale, P tile
      scalar_t mx = neg_inf<scalar_t>();
#pragma unroll
      for (int bb = 0; bb < TN; ++bb) mx = d_max(mx, s[a][bb]);
      const scalar_t m_new = d_max(m_run[a], group16_max(mx));
      const scalar_t alpha = m_new == neg_inf<scalar_t>() ? scalar_t(0) : d_exp(m_run[a] - m_new);
      scalar_t sum = 0;
#pragma unroll
      for (int bb = 0; bb < TN; ++bb) {
        const scalar_t p = s[a][bb] == neg_inf<scalar_t>() ? scalar_t(0) : d_exp(s[a][bb] - m_new);
        Ps[(ty + 16 * a) * LP + tx + 16 * bb] = p;
        sum += p;
      }
      l_part[a] = l_part[a] * alpha + sum;
      m_run[a] = m_new;
#pragma unroll
      for (int c = 0; c < TD; ++c) acc[a][c] *= alpha;
    }
    __syncthreads();
    mm_nn<scalar_t, TM, TD, BC>(acc, Ps, LP, Vs, LD, ty, tx);
    __syncthreads();
  }
#pragma unroll
  for (int a = 0; a < TM; ++a) {
    const scalar_t l = group16_sum(l_part[a]);
    const int64_t i = r0 + ty + 16 * a;
    if (i >= d.T) continue;
    const bool empty = l == scalar_t(0);  // no allowed key with a finite score
    const scalar_t inv = empty ? scalar_t(0) : scalar_t(1) / l;
    scalar_t* orow = o + (bh * d.T + i) * d.hsv;
#pragma unroll
    for (int c = 0; c < TD; ++c)
      if (tx + 16 * c < d.hsv) orow[tx + 16 * c] = empty ? scalar_t(0) : acc[a][c] * inv;
    if (tx == 0) lse[bh * d.T + i] = empty ? neg_inf<scalar_t>() : m_run[a] + d_log(l);
  }
}

// ---- backward ----
// Dv[r] = Σ_c dout[r][c]·o[r][c] over rows r < rows (double accumulation), one warp per row.
template <typename scalar_t>
__global__ void dot_kernel(scalar_t* Dv, const scalar_t* dout, const scalar_t* o, int64_t rows,
                           int hsv) {
  const int lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * warps + threadIdx.x / 32; r < rows;
       r += static_cast<int64_t>(gridDim.x) * warps) {
    double acc = 0;
    for (int c = lane; c < hsv; c += 32)
      acc += static_cast<double>(dout[r * hsv + c]) * static_cast<double>(o[r * hsv + c]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) Dv[r] = static_cast<scalar_t>(acc);
  }
}

// P and dS of one score entry: s the masked score, lse and Dr its row's. Entries that take no
// part (s = -inf, masked or additive -inf) and rows with no allowed key (lse = -inf) give 0.
template <typename scalar_t>
__device__ __forceinline__ void p_and_ds(scalar_t s, scalar_t dp, scalar_t lse, scalar_t Dr,
                                         scalar_t& p, scalar_t& ds) {
  const bool live = s != neg_inf<scalar_t>() && lse != neg_inf<scalar_t>();
  p = live ? d_exp(s - lse) : scalar_t(0);
  ds = live ? p * (dp - Dr) : scalar_t(0);
}

// Block: (b, h, query tile qt), as the forward. dq (B, NH, T, hs) = scale · Σ_j dS_ij·k_j.
template <typename scalar_t, int D>
__global__ void __launch_bounds__(kThreads)
    dq_kernel(scalar_t* dq, const scalar_t* dout, const scalar_t* q, const scalar_t* k,
              const scalar_t* v, const scalar_t* lse, const scalar_t* Dv, const int64_t* row_lo,
              const int64_t* row_hi, const int64_t* tile_lo, const int64_t* tile_hi, Dims d,
              scalar_t scale, MaskDesc m) {
  using C = Cfg<scalar_t, D>;
  constexpr int BR = C::BR, BC = C::BC, LD = C::LD, LP = C::LP;
  constexpr int TM = C::TM, TN = C::TN, TD = C::TD;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  int64_t* rlo = reinterpret_cast<int64_t*>(smem_raw);
  int64_t* rhi = rlo + BR;
  scalar_t* Qs = reinterpret_cast<scalar_t*>(rhi + BR);
  scalar_t* dOs = Qs + BR * LD;
  scalar_t* Ks = dOs + BR * LD;
  scalar_t* Vs = Ks + BC * LD;
  scalar_t* dSs = Vs + BC * LD;
  int* kok = reinterpret_cast<int*>(dSs + BR * LP);

  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t nqt = (d.T + BR - 1) / BR;
  const int64_t bh = blockIdx.x % d.BH, qt = nqt - 1 - blockIdx.x / d.BH;
  const int64_t b = bh / d.NH, h = bh % d.NH, r0 = qt * BR;
  load_rows<scalar_t, D, BR>(Qs, q + bh * d.T * d.hs, r0, d.T, d.hs);
  load_rows<scalar_t, D, BR>(dOs, dout + bh * d.T * d.hsv, r0, d.T, d.hsv);
  load_row_ranges<BR>(rlo, rhi, row_lo, row_hi, r0, d.T);
  scalar_t lse_r[TM], D_r[TM], acc[TM][TD];
#pragma unroll
  for (int a = 0; a < TM; ++a) {
    const int64_t i = r0 + ty + 16 * a;
    lse_r[a] = i < d.T ? lse[bh * d.T + i] : neg_inf<scalar_t>();
    D_r[a] = i < d.T ? Dv[bh * d.T + i] : scalar_t(0);
#pragma unroll
    for (int c = 0; c < TD; ++c) acc[a][c] = 0;
  }
  const int64_t khi = tile_hi[qt];
  for (int64_t c0 = tile_lo[qt] / BC * BC; c0 <= khi; c0 += BC) {
    load_rows<scalar_t, D, BC>(Ks, k + bh * d.S * d.hs, c0, d.S, d.hs);
    load_rows<scalar_t, D, BC>(Vs, v + bh * d.S * d.hsv, c0, d.S, d.hsv);
    load_key_ok<BC>(kok, m, b, c0, d.S);
    __syncthreads();
    scalar_t s[TM][TN], dp[TM][TN];
    mm_nt<scalar_t, TM, TN, D>(s, Qs, LD, Ks, LD, ty, tx);
    mask_scores<scalar_t, TM, TN, BC>(s, m, rlo, rhi, kok, b, h, r0, c0, scale, ty, tx);
    mm_nt<scalar_t, TM, TN, D>(dp, dOs, LD, Vs, LD, ty, tx);
#pragma unroll
    for (int a = 0; a < TM; ++a)
#pragma unroll
      for (int bb = 0; bb < TN; ++bb) {
        scalar_t p, ds;
        p_and_ds(s[a][bb], dp[a][bb], lse_r[a], D_r[a], p, ds);
        dSs[(ty + 16 * a) * LP + tx + 16 * bb] = ds;
      }
    __syncthreads();
    mm_nn<scalar_t, TM, TD, BC>(acc, dSs, LP, Ks, LD, ty, tx);
    __syncthreads();
  }
#pragma unroll
  for (int a = 0; a < TM; ++a) {
    const int64_t i = r0 + ty + 16 * a;
    if (i >= d.T) continue;
#pragma unroll
    for (int c = 0; c < TD; ++c)
      if (tx + 16 * c < d.hs) dq[(bh * d.T + i) * d.hs + tx + 16 * c] = scale * acc[a][c];
  }
}

// Block: (b, h, key tile kt). dk (B, NH, S, hs) = scale · Σ_i dS_ijᵀ·q_i, dv (B, NH, S, hs_v) =
// Σ_i P_ijᵀ·dO_i over the query tiles whose key range meets this key tile, in tile order.
template <typename scalar_t, int D>
__global__ void __launch_bounds__(kThreads)
    dkv_kernel(scalar_t* dk, scalar_t* dv, const scalar_t* dout, const scalar_t* q,
               const scalar_t* k, const scalar_t* v, const scalar_t* lse, const scalar_t* Dv,
               const int64_t* row_lo, const int64_t* row_hi, const int64_t* tile_lo,
               const int64_t* tile_hi, Dims d, scalar_t scale, MaskDesc m) {
  using C = Cfg<scalar_t, D>;
  constexpr int BR = C::BR, BC = C::BC, LD = C::LD, LP = C::LP;
  constexpr int TM = C::TM, TN = C::TN, TD = C::TD;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  int64_t* rlo = reinterpret_cast<int64_t*>(smem_raw);
  int64_t* rhi = rlo + BR;
  scalar_t* Ks = reinterpret_cast<scalar_t*>(rhi + BR);
  scalar_t* Vs = Ks + BC * LD;
  scalar_t* Qs = Vs + BC * LD;
  scalar_t* dOs = Qs + BR * LD;
  scalar_t* Ps = dOs + BR * LD;
  scalar_t* dSs = Ps + BR * LP;
  scalar_t* lse_s = dSs + BR * LP;
  scalar_t* D_s = lse_s + BR;
  int* kok = reinterpret_cast<int*>(D_s + BR);

  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t nqt = (d.T + BR - 1) / BR;
  const int64_t bh = blockIdx.x % d.BH, kt = blockIdx.x / d.BH;
  const int64_t b = bh / d.NH, h = bh % d.NH, c0 = kt * BC;
  const int64_t c_last = imin(c0 + BC, d.S) - 1;
  load_rows<scalar_t, D, BC>(Ks, k + bh * d.S * d.hs, c0, d.S, d.hs);
  load_rows<scalar_t, D, BC>(Vs, v + bh * d.S * d.hsv, c0, d.S, d.hsv);
  load_key_ok<BC>(kok, m, b, c0, d.S);
  scalar_t dk_acc[TN][TD], dv_acc[TN][TD];  // keys ty + 16a, columns tx + 16c
#pragma unroll
  for (int a = 0; a < TN; ++a)
#pragma unroll
    for (int c = 0; c < TD; ++c) dk_acc[a][c] = dv_acc[a][c] = 0;
  for (int64_t qt = 0; qt < nqt; ++qt) {
    if (tile_lo[qt] > c_last || tile_hi[qt] < c0) continue;  // uniform over the block
    const int64_t r0 = qt * BR;
    load_rows<scalar_t, D, BR>(Qs, q + bh * d.T * d.hs, r0, d.T, d.hs);
    load_rows<scalar_t, D, BR>(dOs, dout + bh * d.T * d.hsv, r0, d.T, d.hsv);
    load_row_ranges<BR>(rlo, rhi, row_lo, row_hi, r0, d.T);
    for (int r = threadIdx.x; r < BR; r += kThreads) {
      const int64_t i = r0 + r;
      lse_s[r] = i < d.T ? lse[bh * d.T + i] : neg_inf<scalar_t>();
      D_s[r] = i < d.T ? Dv[bh * d.T + i] : scalar_t(0);
    }
    __syncthreads();
    scalar_t s[TM][TN], dp[TM][TN];
    mm_nt<scalar_t, TM, TN, D>(s, Qs, LD, Ks, LD, ty, tx);
    mask_scores<scalar_t, TM, TN, BC>(s, m, rlo, rhi, kok, b, h, r0, c0, scale, ty, tx);
    mm_nt<scalar_t, TM, TN, D>(dp, dOs, LD, Vs, LD, ty, tx);
#pragma unroll
    for (int a = 0; a < TM; ++a)
#pragma unroll
      for (int bb = 0; bb < TN; ++bb) {
        const int ra = ty + 16 * a, cb = tx + 16 * bb;
        scalar_t p, ds;
        p_and_ds(s[a][bb], dp[a][bb], lse_s[ra], D_s[ra], p, ds);
        Ps[ra * LP + cb] = p;
        dSs[ra * LP + cb] = ds;
      }
    __syncthreads();
    mm_tn<scalar_t, TN, TD, BR>(dv_acc, Ps, LP, dOs, LD, ty, tx);
    mm_tn<scalar_t, TN, TD, BR>(dk_acc, dSs, LP, Qs, LD, ty, tx);
    __syncthreads();
  }
#pragma unroll
  for (int a = 0; a < TN; ++a) {
    const int64_t j = c0 + ty + 16 * a;
    if (j > c_last) continue;
#pragma unroll
    for (int c = 0; c < TD; ++c) {
      const int col = tx + 16 * c;
      if (col < d.hs) dk[(bh * d.S + j) * d.hs + col] = scale * dk_acc[a][c];
      if (col < d.hsv) dv[(bh * d.S + j) * d.hsv + col] = dv_acc[a][c];
    }
  }
}

// ---- host side ----
// Device memory from the caching allocator, released when the scope ends (stream-ordered).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : dev_(current_device()) {
    if (bytes) p_ = alloc(bytes, dev_);
  }
  ~DeviceBuffer() {
    if (p_) free(p_, dev_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename U>
  U* as() const {
    return static_cast<U*>(p_);
  }

 private:
  int dev_;
  void* p_ = nullptr;
};

// The structural plan of (T, S) for query tiles of BR rows: row_lo, row_hi (T) and tile_lo,
// tile_hi (nqt), int64.
struct Plan {
  explicit Plan(int64_t T, int64_t nqt)
      : buf(static_cast<size_t>(2 * (T + nqt)) * sizeof(int64_t)),
        row_lo(buf.as<int64_t>()),
        row_hi(row_lo + T),
        tile_lo(row_hi + T),
        tile_hi(tile_lo + nqt) {}
  DeviceBuffer buf;
  int64_t *row_lo, *row_hi, *tile_lo, *tile_hi;
};

template <int BR>
void launch_plan(const Plan& p, const MaskDesc& m, int64_t T, int64_t S, int64_t nqt) {
  if (nqt == 0) return;
  plan_kernel<BR><<<static_cast<unsigned>(nqt), BR, 0, detail::cur_stream()>>>(
      p.row_lo, p.row_hi, p.tile_lo, p.tile_hi, m, T, S);
  TG_CUDA_LAUNCH_CHECK("attention plan_kernel");
}

// Blocks of a one-dimensional grid; throws past the CUDA limit.
unsigned grid_size(int64_t blocks, const char* what) {
  if (blocks > 0x7fffffff)
    throw Error(std::string(what) + ": " + std::to_string(blocks) +
                " blocks exceed the grid limit");
  return static_cast<unsigned>(blocks);
}

// Calls f(std::integral_constant<int, D>) with D the padded head size for max(hs, hs_v).
template <typename F>
void dispatch_head(int64_t hs, int64_t hsv, const char* what, F&& f) {
  const int64_t m = hs > hsv ? hs : hsv;
  if (m <= 32)
    f(std::integral_constant<int, 32>{});
  else if (m <= 64)
    f(std::integral_constant<int, 64>{});
  else if (m <= kAttentionMaxHeadSize)
    f(std::integral_constant<int, 128>{});
  else
    throw Error(std::string(what) + ": head size " + std::to_string(m) + " exceeds " +
                std::to_string(kAttentionMaxHeadSize));
}

template <typename scalar_t, int D>
void run_forward(scalar_t* o, scalar_t* lse, const scalar_t* q, const scalar_t* k,
                 const scalar_t* v, const Dims& d, double scale, const MaskDesc& m) {
  using C = Cfg<scalar_t, D>;
  const int64_t nqt = (d.T + C::BR - 1) / C::BR;
  Plan plan(d.T, nqt);
  launch_plan<C::BR>(plan, m, d.T, d.S, nqt);
  constexpr size_t smem = fwd_smem<scalar_t, D>();
  TG_CUDA_CHECK(cudaFuncSetAttribute(fwd_kernel<scalar_t, D>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  fwd_kernel<scalar_t, D>
      <<<grid_size(d.BH * nqt, "attention_forward"), kThreads, smem, detail::cur_stream()>>>(
          o, lse, q, k, v, plan.row_lo, plan.row_hi, plan.tile_lo, plan.tile_hi, d,
          static_cast<scalar_t>(scale), m);
  TG_CUDA_LAUNCH_CHECK("attention fwd_kernel");
}

template <typename scalar_t, int D>
void run_backward(scalar_t* dq, scalar_t* dk, scalar_t* dv, const scalar_t* dout, const scalar_t* q,
                  const scalar_t* k, const scalar_t* v, const scalar_t* o, const scalar_t* lse,
                  const Dims& d, double scale, const MaskDesc& m) {
  using C = Cfg<scalar_t, D>;
  const int64_t nqt = (d.T + C::BR - 1) / C::BR, nkt = (d.S + C::BC - 1) / C::BC;
  const scalar_t sc = static_cast<scalar_t>(scale);
  Plan plan(d.T, nqt);
  launch_plan<C::BR>(plan, m, d.T, d.S, nqt);
  DeviceBuffer Dbuf(static_cast<size_t>(d.BH * d.T) * sizeof(scalar_t));
  scalar_t* Dv = Dbuf.as<scalar_t>();
  if (d.T > 0) {
    dot_kernel<scalar_t><<<detail::grid_for(d.BH * d.T, 8), 256, 0, detail::cur_stream()>>>(
        Dv, dout, o, d.BH * d.T, d.hsv);
    TG_CUDA_LAUNCH_CHECK("attention dot_kernel");
    constexpr size_t smem = dq_smem<scalar_t, D>();
    TG_CUDA_CHECK(cudaFuncSetAttribute(dq_kernel<scalar_t, D>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    dq_kernel<scalar_t, D>
        <<<grid_size(d.BH * nqt, "attention_backward"), kThreads, smem, detail::cur_stream()>>>(
            dq, dout, q, k, v, lse, Dv, plan.row_lo, plan.row_hi, plan.tile_lo, plan.tile_hi, d, sc,
            m);
    TG_CUDA_LAUNCH_CHECK("attention dq_kernel");
  }
  if (d.S > 0) {
    constexpr size_t smem = dkv_smem<scalar_t, D>();
    TG_CUDA_CHECK(cudaFuncSetAttribute(dkv_kernel<scalar_t, D>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    dkv_kernel<scalar_t, D>
        <<<grid_size(d.BH * nkt, "attention_backward"), kThreads, smem, detail::cur_stream()>>>(
            dk, dv, dout, q, k, v, lse, Dv, plan.row_lo, plan.row_hi, plan.tile_lo, plan.tile_hi, d,
            sc, m);
    TG_CUDA_LAUNCH_CHECK("attention dkv_kernel");
  }
}

}  // namespace

void attention_forward(DT dt, void* o, void* lse, const void* q, const void* k, const void* v,
                       int64_t B, int64_t NH, int64_t T, int64_t S, int64_t hs, int64_t hs_v,
                       double scale, const MaskDesc& mask) {
  const Dims d{B * NH, NH, T, S, static_cast<int>(hs), static_cast<int>(hs_v)};
  if (d.BH == 0 || T == 0) return;
  TG_DISPATCH_FLOAT(dt, "attention_forward", [&] {
    dispatch_head(hs, hs_v, "attention_forward", [&](auto dc) {
      run_forward<scalar_t, decltype(dc)::value>(
          static_cast<scalar_t*>(o), static_cast<scalar_t*>(lse), static_cast<const scalar_t*>(q),
          static_cast<const scalar_t*>(k), static_cast<const scalar_t*>(v), d, scale, mask);
    });
  });
}

void attention_backward(DT dt, void* dq, void* dk, void* dv, const void* dout, const void* q,
                        const void* k, const void* v, const void* o, const void* lse, int64_t B,
                        int64_t NH, int64_t T, int64_t S, int64_t hs, int64_t hs_v, double scale,
                        const MaskDesc& mask) {
  const Dims d{B * NH, NH, T, S, static_cast<int>(hs), static_cast<int>(hs_v)};
  if (d.BH == 0) return;
  TG_DISPATCH_FLOAT(dt, "attention_backward", [&] {
    dispatch_head(hs, hs_v, "attention_backward", [&](auto dc) {
      run_backward<scalar_t, decltype(dc)::value>(
          static_cast<scalar_t*>(dq), static_cast<scalar_t*>(dk), static_cast<scalar_t*>(dv),
          static_cast<const scalar_t*>(dout), static_cast<const scalar_t*>(q),
          static_cast<const scalar_t*>(k), static_cast<const scalar_t*>(v),
          static_cast<const scalar_t*>(o), static_cast<const scalar_t*>(lse), d, scale, mask);
    });
  });
}

}  // namespace tg::cuda
