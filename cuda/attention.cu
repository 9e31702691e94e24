// cuda/attention.cu — fused scaled-dot-product attention on the GPU, FlashAttention-2 style, for
// F32 and F64: attention_forward (o, lse) and attention_backward (dq, dk, dv), with every part of
// MaskDesc. Never a T×S buffer: the extra memory is the plan (key range per query row and tile)
// and lse / D, O(T).
//
// Masks. plan_kernel evaluates key_range (ops/kern/kernel_codes.hpp, the CPU's too) once per query
// row into row_lo/row_hi, and per query tile the union [tile_lo, tile_hi]. Key tiles outside a
// query tile's union are never visited (causal, local and blocked masks cost their band only). Per
// visited tile, shared memory holds each row's range relative to the tile and one flag per key
// (j < S, padding, lengths); a tile that every row allows whole, with no bool/additive part, skips
// the per-entry checks (__syncthreads_and); otherwise each entry checks range, key flag, bool part,
// and adds the additive part.
//
// Kernels: 256 threads, tx = threadIdx % 16, ty = threadIdx / 16; register tiles of up to 4×4 per
// thread read from shared memory as vector chunks (see "tile shapes").
//   fwd_kernel  block per (b, h, query tile): online softmax over the key tiles (running max m and
//               sum l per row), O in registers; o = acc / l, lse = m + log l (-inf, o = 0: no key).
//               K/V tiles arrive by cp.async one tile ahead (no extra shared memory).
//   dot_kernel  D_i = Σ dO_i·O_i (double accumulation), one warp per row.
//   dq_kernel   block per (b, h, query tile): dQ = scale·Σ dS·K over its key tiles, P recomputed
//               (same layout and pipelining as the forward).
//   dkv_kernel  block per (b, h, key tile): dV = Σ Pᵀ·dO, dK = scale·Σ dSᵀ·Q over the query tiles
//               that see it.
//   bias_diag_kernel, bias_reduce_kernel  with position biases that need gradients: dS summed
//               per diagonal j - i', then per bucket and for the slope; O(T + S).
// No atomics anywhere: deterministic.
// Numerics follow the CPU: s = scale·(q·k) (+ additive + position biases, summed in double); -inf
// scores take no part; masked entries and rows with no allowed key give P = 0 and dS = 0 (zero
// gradient); NaN or +inf scores make the row NaN, as the CPU's softmax does. F32 accumulates in
// float32 (plain FMA, no tensor cores). Deliberately not here: dropout, need_weights and probes
// (ops/ takes the CPU path for those).
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
// D is the head size padded to 32 / 64 / 128 (q/k and v share it). Every product is a sum of
// outer products over shared tiles stored k-major (the summed index outermost). A thread owns TM
// "rows" in chunks of RC consecutive ones, row(a) = (a / RC)·16·RC + ty·RC + a % RC (one vector
// load per chunk, a broadcast within the 16 lanes of a row group), and TN "columns" in chunks of
// CC by tx, col(b) = row_of<CC>(b, tx) (16 lanes read consecutive chunks). With 4×4 tiles that
// is 3 shared wavefronts per 16 FMAs, no bank conflicts (P tiles are written XOR-swizzled).
// dkv_kernel reads its columns as scalars (CC = 1) from row-major tiles with an odd stride: Q
// and dO serve there both as rows and as columns, and a k-major copy of each would not fit.
// Shared bytes of a tile's mask (TileMask below): 2·BR int64, then 2·BR + BC int.
template <int BR, int BC>
constexpr size_t mask_bytes() {
  return 2 * BR * sizeof(int64_t) + (2 * BR + BC) * sizeof(int);
}
template <typename scalar_t, int D>
struct FwdCfg {  // forward: BR query rows × BC keys per tile, every operand k-major
  static constexpr int BR = sizeof(scalar_t) == 8 && D == 128 ? 32 : 64;
  static constexpr int BC = BR;
  static constexpr size_t kSmem =
      (D * BR + D * BC + BC * D + BC * BR) * sizeof(scalar_t) + mask_bytes<BR, BC>();
};
template <typename scalar_t, int D>
struct BwdCfg {  // backward: BR query rows × BC keys per tile (dkv_kernel: keys × rows)
  static constexpr bool kF64 = sizeof(scalar_t) == 8;
  static constexpr int BR = kF64 && D == 128 ? 32 : 64;
  static constexpr int BC = D == 128 ? 32 : 64;
  static constexpr int LC = BC + 4, LK = D + 1;  // dkv_kernel's strides
  static constexpr size_t kSmemDq =
      (2 * D * BR + 3 * D * BC + BC * BR) * sizeof(scalar_t) + mask_bytes<BR, BC>();
  static constexpr size_t kSmemDkv =
      (2 * D * LC + 2 * BR * LK + 2 * BR * LC + 2 * BR) * sizeof(scalar_t) + mask_bytes<BR, BC>();
};
constexpr size_t kMaxSmem = 227 * 1024;  // sm_90: dynamic shared memory per block (opt-in)
// Blocks per SM the F32 kernels are compiled for (__launch_bounds__: at most 128 registers); the
// F64 ones take what they need (one block per SM, their tiles fill shared memory anyway).
template <typename scalar_t>
constexpr int kMinBlocks = sizeof(scalar_t) == 4 ? 2 : 1;

template <int RC>
__device__ __forceinline__ int row_of(int a, int ty) {
  return (a / RC) * 16 * RC + ty * RC + a % RC;
}

// One chunk of RC (1, 2 or 4) consecutive values as vector accesses (aligned to the chunk; a
// double chunk of 4 is two 16-byte accesses).
template <int RC>
__device__ __forceinline__ void ld_chunk(float* v, const float* p) {
  static_assert(RC == 1 || RC == 2 || RC == 4, "chunks of 1, 2 or 4");
  if constexpr (RC == 4) {
    const float4 t = *reinterpret_cast<const float4*>(p);
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
  } else if constexpr (RC == 2) {
    const float2 t = *reinterpret_cast<const float2*>(p);
    v[0] = t.x, v[1] = t.y;
  } else {
    v[0] = p[0];
  }
}
template <int RC>
__device__ __forceinline__ void ld_chunk(double* v, const double* p) {
  static_assert(RC == 1 || RC == 2 || RC == 4, "chunks of 1, 2 or 4");
  if constexpr (RC == 1) {
    v[0] = p[0];
  } else {
#pragma unroll
    for (int r = 0; r < RC; r += 2) {
      const double2 t = *reinterpret_cast<const double2*>(p + r);
      v[r] = t.x, v[r + 1] = t.y;
    }
  }
}
template <int RC>
__device__ __forceinline__ void st_chunk(float* p, const float* v) {
  static_assert(RC == 1 || RC == 2 || RC == 4, "chunks of 1, 2 or 4");
  if constexpr (RC == 4)
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  else if constexpr (RC == 2)
    *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1]);
  else
    p[0] = v[0];
}
template <int RC>
__device__ __forceinline__ void st_chunk(double* p, const double* v) {
  static_assert(RC == 1 || RC == 2 || RC == 4, "chunks of 1, 2 or 4");
  if constexpr (RC == 1) {
    p[0] = v[0];
  } else {
#pragma unroll
    for (int r = 0; r < RC; r += 2)
      *reinterpret_cast<double2*>(p + r) = make_double2(v[r], v[r + 1]);
  }
}

// ---- the structural mask: kern::key_range (ops/kern/kernel_codes.hpp), shared with the CPU ----

// One block of BR threads per query tile: row_lo/row_hi (T) per row, and tile_lo/tile_hi the
// union of the tile's non-empty rows (lo = S, hi = -1 when every row is empty).
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

// ---- loading tiles into shared memory ----
template <typename scalar_t>
__device__ __forceinline__ void cp_async(scalar_t* dst, const scalar_t* src, bool valid) {
  constexpr int kBytes = static_cast<int>(sizeof(scalar_t));
  const unsigned sdst = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(sdst), "l"(src), "n"(kBytes),
               "r"(valid ? kBytes : 0)
               : "memory");
}
__device__ __forceinline__ void cp_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Waits until at most N of this thread's committed cp.async groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// *dst = src[off] if valid, else 0. kAsync: an asynchronous cp.async copy (sm_80+; zero-filled
// when not valid, src itself is then read nowhere): visible after cp_wait and a barrier.
template <bool kAsync, typename scalar_t>
__device__ __forceinline__ void put(scalar_t* dst, const scalar_t* src, int64_t off, bool valid) {
  if constexpr (kAsync) {
    cp_async(dst, src + (valid ? off : 0), valid);
  } else {
    *dst = valid ? src[off] : scalar_t(0);
  }
}
// dst[r][c] (row stride LDS) = src[(row0 + r)·ld + c] for 0 <= row0 + r < nrows and c < width,
// else 0: a (ROWS, D) tile, lanes walking columns (coalesced).
template <typename scalar_t, int D, int ROWS, int LDS, bool kAsync = false>
__device__ void load_rows(scalar_t* dst, const scalar_t* src, int64_t row0, int64_t nrows,
                          int width, int64_t ld) {
  for (int e = threadIdx.x; e < ROWS * D; e += kThreads) {
    const int r = e / D, c = e % D;
    const int64_t row = row0 + r;
    put<kAsync>(dst + r * LDS + c, src, row * ld + c, row >= 0 && row < nrows && c < width);
  }
}

// dst[c][r] (row stride LDS) = src[(row0 + r)·ld + c], 0 outside rows < nrows, c < width:
// a (ROWS, D) tile stored k-major, lanes walking rows (conflict-free shared stores; each thread's
// global reads of a row are reused from L1).
template <typename scalar_t, int D, int ROWS, int LDS, bool kAsync = false>
__device__ void load_t(scalar_t* dst, const scalar_t* src, int64_t row0, int64_t nrows, int width,
                       int64_t ld) {
  for (int e = threadIdx.x; e < ROWS * D; e += kThreads) {
    const int r = e % ROWS, c = e / ROWS;
    const int64_t row = row0 + r;
    put<kAsync>(dst + c * LDS + r, src, row * ld + c, row < nrows && c < width);
  }
}

// The mask of a tile with query rows r0.. and keys c0.., in shared memory: rl[r], rh[r] = row
// r's allowed keys [rl, rh) relative to c0, clamped to [0, BC] (empty past T); roff[r] and
// roff[BR + r] = the row's element offset in the bool and additive parts (at key 0); kok[c] = key
// c0 + c passes the key-only parts (j < S, padding, lengths). Row offsets live in shared memory,
// not registers, so that the key loop stays within the register budget.
struct TileMask {
  int *rl, *rh, *kok;
  int64_t* roff;
};
template <int BR, int BC>
__device__ TileMask carve_mask(unsigned char* p) {  // 2·BR int64, then 2·BR + BC int
  int64_t* roff = reinterpret_cast<int64_t*>(p);
  int* rl = reinterpret_cast<int*>(roff + 2 * BR);
  return {rl, rl + BR, rl + 2 * BR, roff};
}
// Returns whether this thread's rows and keys allow the whole tile (and no data part is set):
// __syncthreads_and of it says the tile needs no per-entry checks.
template <int BR, int BC>
__device__ bool load_mask(const TileMask& tm, const int64_t* row_lo, const int64_t* row_hi,
                          const MaskDesc& m, int64_t b, int64_t h, int64_t r0, int64_t c0,
                          int64_t T, int64_t S) {
  bool full = !m.allowed && !m.additive && !m.rel && !m.alibi;
  for (int r = threadIdx.x; r < BR; r += kThreads) {
    const int64_t i = r0 + r;
    const int64_t lo = i < T ? row_lo[i] : 1, hi = i < T ? row_hi[i] : 0;
    const int64_t a = imin(imax(lo - c0, 0), BC);
    tm.rl[r] = static_cast<int>(a);
    tm.rh[r] = static_cast<int>(imin(imax(hi - c0 + 1, a), BC));
    full = full && tm.rl[r] == 0 && tm.rh[r] == BC;
    const int64_t *sa = m.allowed_stride, *sd = m.additive_stride;
    tm.roff[r] = b * sa[0] + h * sa[1] + i * sa[2];
    tm.roff[BR + r] = b * sd[0] + h * sd[1] + i * sd[2];
  }
  for (int c = threadIdx.x; c < BC; c += kThreads) {
    const int64_t j = c0 + c;
    bool ok = j < S;
    if (ok && m.key_allowed) ok = m.key_allowed[b * S + j];
    if (ok && m.key_lengths) ok = j < m.key_lengths[b];
    tm.kok[c] = ok;
    full = full && ok;
  }
  return full;
}

// ---- the register-tiled product over shared tiles ----
template <typename scalar_t, int TM, int TN>
__device__ __forceinline__ void zero(scalar_t (&x)[TM][TN]) {
#pragma unroll
  for (int a = 0; a < TM; ++a)
#pragma unroll
    for (int b = 0; b < TN; ++b) x[a][b] = scalar_t(0);
}

// acc[a][b] += Σ_x A[x][row(a)]·B(x, col(b)), x < NX: A k-major (row stride LA), rows in chunks
// of RC (by ty); with SW > 0 A is a tile written by store_t with kSwizzle for key chunks of SW. B
// (row stride LB) is k-major too, read in chunks of CC (by tx) at B[x][col(b)], or with kBRows
// (CC = 1) at B[col(b)][x]: its rows are the columns (odd stride: conflict-free scalar loads).
template <typename scalar_t, int TM, int RC, int TN, int CC, int NX, int LA, int LB, int SW = 0,
          bool kBRows = false>
__device__ __forceinline__ void mm(scalar_t (&acc)[TM][TN], const scalar_t* A, const scalar_t* B,
                                   int ty, int tx) {
#pragma unroll 4
  for (int x = 0; x < NX; ++x) {
    scalar_t av[TM], bv[TN];
    const int sw = SW > 0 ? (x / (SW > 0 ? SW : 1)) % 16 : 0;
#pragma unroll
    for (int g = 0; g < TM / RC; ++g)
      ld_chunk<RC>(av + g * RC, A + x * LA + ((g * 16 + ty) ^ sw) * RC);
#pragma unroll
    for (int g = 0; g < TN / CC; ++g) {
      if constexpr (kBRows)
        bv[g] = B[row_of<1>(g, tx) * LB + x];
      else
        ld_chunk<CC>(bv + g * CC, B + x * LB + (g * 16 + tx) * CC);
    }
#pragma unroll
    for (int a = 0; a < TM; ++a)
#pragma unroll
      for (int b = 0; b < TN; ++b) acc[a][b] += av[a] * bv[b];
  }
}
// P[col(b)][row chunk] = x[a][b] (row stride L), the thread's tile stored k-major for a later mm.
// kSwizzle: the row chunk index is XORed with the key's chunk (col(b) / CC) % 16 = tx, which
// makes the stores conflict-free and keeps mm's reads (SW = CC) broadcasts.
template <typename scalar_t, int TM, int RC, int TN, int CC, int L, bool kSwizzle>
__device__ __forceinline__ void store_t(scalar_t* P, const scalar_t (&x)[TM][TN], int ty, int tx) {
#pragma unroll
  for (int b = 0; b < TN; ++b)
#pragma unroll
    for (int g = 0; g < TM / RC; ++g) {
      scalar_t t[RC];
#pragma unroll
      for (int r = 0; r < RC; ++r) t[r] = x[g * RC + r][b];
      st_chunk<RC>(P + row_of<CC>(b, tx) * L + ((g * 16 + ty) ^ (kSwizzle ? tx : 0)) * RC, t);
    }
}

// A scaled score v of entry (i, j) of head h plus the additive term a (0 without one) and the
// position biases: the terms summed in double and added once, as the CPU's mask_row does.
template <typename scalar_t>
__device__ __forceinline__ scalar_t with_biases(const MaskDesc& m, scalar_t v, double a, int64_t h,
                                                int64_t i, int64_t j) {
  return static_cast<scalar_t>(static_cast<double>(v) + (a + position_bias(m, h, i, j)));
}

// Where a tile sits: query rows r0.., keys c0.., query head h (the position biases read it).
struct TileAt {
  int64_t r0, c0, h;
};
// Masks the raw dot products s of a tile: scale·s (+ additive, + position biases) where the
// entry is allowed, -inf where not. Entry (a, b) is query row(a), key col(b); with kKeyMajor key
// row(a), query col(b). With position biases the terms are summed in double and added to the
// scaled score once, as the CPU's mask_row does.
template <bool kKeyMajor, int BR, typename scalar_t, int TM, int RC, int TN, int CC = 1>
__device__ void mask_entries(scalar_t (&s)[TM][TN], const MaskDesc& m, const TileMask& tm,
                             TileAt at, scalar_t scale, int ty, int tx) {
  const scalar_t* add = static_cast<const scalar_t*>(m.additive);
  const bool pos = m.rel || m.alibi;
#pragma unroll
  for (int a = 0; a < TM; ++a)
#pragma unroll
    for (int bb = 0; bb < TN; ++bb) {
      const int x = row_of<RC>(a, ty), y = row_of<CC>(bb, tx);
      const int r = kKeyMajor ? y : x, c = kKeyMajor ? x : y;
      const int64_t j = at.c0 + c;
      bool ok = c >= tm.rl[r] && c < tm.rh[r] && tm.kok[c];
      if (ok && m.allowed) ok = m.allowed[tm.roff[r] + j * m.allowed_stride[3]];
      scalar_t v = s[a][bb] * scale;
      if (ok && pos) {
        const double a =
            add ? static_cast<double>(add[tm.roff[BR + r] + j * m.additive_stride[3]]) : 0.0;
        v = with_biases(m, v, a, at.h, at.r0 + r, j);
      } else if (ok && add) {
        v += add[tm.roff[BR + r] + j * m.additive_stride[3]];
      }
      s[a][bb] = ok ? v : neg_inf<scalar_t>();
    }
}
// The same for a tile the mask allows entirely (full): scale only.
template <bool kKeyMajor, int BR, typename scalar_t, int TM, int RC, int TN, int CC = 1>
__device__ __forceinline__ void mask_scores(scalar_t (&s)[TM][TN], bool full, const MaskDesc& m,
                                            const TileMask& tm, TileAt at, scalar_t scale, int ty,
                                            int tx) {
  if (!full)
    return mask_entries<kKeyMajor, BR, scalar_t, TM, RC, TN, CC>(s, m, tm, at, scale, ty, tx);
#pragma unroll
  for (int a = 0; a < TM; ++a)
#pragma unroll
    for (int bb = 0; bb < TN; ++bb) s[a][bb] *= scale;
}

// One online-softmax step of a row over this thread's TN scores s of it: the running max m_run
// takes the row's tile max (over the row's 16 lanes), s becomes P = exp(s − m) (0 for −inf) and
// l_part = l_part·alpha + Σ P. Returns alpha = exp(m_old − m_new), 0 while the max is −inf.
template <typename scalar_t, int TN>
__device__ __forceinline__ scalar_t softmax_step(scalar_t (&s)[TN], scalar_t& m_run,
                                                 scalar_t& l_part) {
  scalar_t mx = neg_inf<scalar_t>();
#pragma unroll
  for (int b = 0; b < TN; ++b) mx = d_max(mx, s[b]);
  const scalar_t m_new = d_max(m_run, group16_max(mx));
  const scalar_t alpha = m_new == neg_inf<scalar_t>() ? scalar_t(0) : d_exp(m_run - m_new);
  scalar_t sum = 0;
#pragma unroll
  for (int b = 0; b < TN; ++b) {
    s[b] = s[b] == neg_inf<scalar_t>() ? scalar_t(0) : d_exp(s[b] - m_new);
    sum += s[b];
  }
  l_part = l_part * alpha + sum;
  m_run = m_new;
  return alpha;
}

// Sizes every kernel reads, and the operands' layout (kern::AttentionLayout, the CPU's too).
constexpr int kQ = AttentionLayout::kQ, kK = AttentionLayout::kK, kV = AttentionLayout::kV,
              kO = AttentionLayout::kO;
struct Dims {
  int64_t BH, NH, T, S;
  int hs, hsv;
  AttentionLayout L;
  // Where head bh's row 0 of operand `which` starts, and the distance between its rows.
  __device__ int64_t head(int which, int64_t bh) const { return L.at(which, bh / NH, bh % NH, 0); }
  __device__ int64_t ld(int which) const { return L.stride(which); }
};

// ---- forward ----
// Block: (b, h, query tile qt), heaviest (last) query tiles first. o (B, NH, T, hs_v), lse
// (B, NH, T). A thread owns query rows row(a) (chunks of 4 by ty) and keys / head columns col(b)
// (chunks of up to 4 by tx).
template <typename scalar_t, int D>
__global__ void __launch_bounds__(kThreads, kMinBlocks<scalar_t>)
    fwd_kernel(scalar_t* o, scalar_t* lse, const scalar_t* q, const scalar_t* k, const scalar_t* v,
               const int64_t* row_lo, const int64_t* row_hi, const int64_t* tile_lo,
               const int64_t* tile_hi, Dims d, scalar_t scale, MaskDesc m) {
  using C = FwdCfg<scalar_t, D>;
  constexpr int BR = C::BR, BC = C::BC, TM = BR / 16, TN = BC / 16, TD = D / 16;
  constexpr int RC = TM < 4 ? TM : 4, CC = TN < 4 ? TN : 4, CD = TD < 4 ? TD : 4;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  scalar_t* Qt = reinterpret_cast<scalar_t*>(smem_raw);  // (D, BR): the query tile, k-major
  scalar_t* Kt = Qt + D * BR;                            // (D, BC)
  scalar_t* Vs = Kt + D * BC;                            // (BC, D)
  scalar_t* Pt = Vs + BC * D;                            // (BC, BR): P, key-major, swizzled
  const TileMask tm = carve_mask<BR, BC>(reinterpret_cast<unsigned char*>(Pt + BC * BR));

  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t nqt = (d.T + BR - 1) / BR;
  const int64_t bh = blockIdx.x % d.BH, qt = nqt - 1 - blockIdx.x / d.BH;
  const int64_t b = bh / d.NH, h = bh % d.NH, r0 = qt * BR;
  load_t<scalar_t, D, BR, BR>(Qt, q + d.head(kQ, bh), r0, d.T, d.hs, d.ld(kQ));
  scalar_t acc[TM][TD], m_run[TM], l_part[TM];  // l_part: over this thread's columns only
  zero(acc);
#pragma unroll
  for (int a = 0; a < TM; ++a) m_run[a] = neg_inf<scalar_t>(), l_part[a] = 0;
  // Key tiles c0 = c_first, c_first + BC, .. <= khi. K and V arrive by cp.async, one tile ahead:
  // K of the next tile loads during P·V, V during the next scores (groups: K, V, K, V, ...).
  const scalar_t* kb = k + d.head(kK, bh);
  const scalar_t* vb = v + d.head(kV, bh);
  const int64_t khi = tile_hi[qt], c_first = tile_lo[qt] / BC * BC;
  if (c_first <= khi) {
    load_t<scalar_t, D, BC, BC, true>(Kt, kb, c_first, d.S, d.hs, d.ld(kK));
    cp_commit();
    load_rows<scalar_t, D, BC, D, true>(Vs, vb, c_first, d.S, d.hsv, d.ld(kV));
    cp_commit();
  }
  for (int64_t c0 = c_first; c0 <= khi; c0 += BC) {
    const bool more = c0 + BC <= khi;
    cp_wait<1>();  // this tile's K (its V may still be in flight)
    const bool full =
        __syncthreads_and(load_mask<BR, BC>(tm, row_lo, row_hi, m, b, h, r0, c0, d.T, d.S));
    scalar_t s[TM][TN];
    zero(s);
    mm<scalar_t, TM, RC, TN, CC, D, BR, BC>(s, Qt, Kt, ty, tx);
    mask_scores<false, BR, scalar_t, TM, RC, TN, CC>(s, full, m, tm, {r0, c0, h}, scale, ty, tx);
#pragma unroll
    for (int a = 0; a < TM; ++a) {
      const scalar_t alpha = softmax_step<scalar_t, TN>(s[a], m_run[a], l_part[a]);
#pragma unroll
      for (int c = 0; c < TD; ++c) acc[a][c] *= alpha;
    }
    store_t<scalar_t, TM, RC, TN, CC, BR, true>(Pt, s, ty, tx);
    cp_wait<0>();  // this tile's V
    __syncthreads();
    if (more) load_t<scalar_t, D, BC, BC, true>(Kt, kb, c0 + BC, d.S, d.hs, d.ld(kK));
    cp_commit();
    mm<scalar_t, TM, RC, TD, CD, BC, BR, D, CC>(acc, Pt, Vs, ty, tx);
    __syncthreads();
    if (more) load_rows<scalar_t, D, BC, D, true>(Vs, vb, c0 + BC, d.S, d.hsv, d.ld(kV));
    cp_commit();
  }
#pragma unroll
  for (int a = 0; a < TM; ++a) {
    const scalar_t l = group16_sum(l_part[a]);
    const int64_t i = r0 + row_of<RC>(a, ty);
    if (i >= d.T) continue;
    const bool empty = l == scalar_t(0);  // no allowed key with a finite score
    const scalar_t inv = empty ? scalar_t(0) : scalar_t(1) / l;
    scalar_t* orow = o + d.head(kO, bh) + i * d.ld(kO);
#pragma unroll
    for (int c = 0; c < TD; ++c) {
      const int col = row_of<CD>(c, tx);
      if (col < d.hsv) orow[col] = empty ? scalar_t(0) : acc[a][c] * inv;
    }
    if (tx == 0) lse[bh * d.T + i] = empty ? neg_inf<scalar_t>() : m_run[a] + d_log(l);
  }
}

// ---- backward ----
// Dv[r] = Σ_c dout[r][c]·o[r][c] over rows r = (bh, t) < BH·T (double accumulation; dout and o
// in the output's layout), one warp per row.
template <typename scalar_t>
__global__ void dot_kernel(scalar_t* Dv, const scalar_t* dout, const scalar_t* o, Dims d) {
  const int lane = threadIdx.x % 32, warps = blockDim.x / 32;
  const int64_t rows = d.BH * d.T;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * warps + threadIdx.x / 32; r < rows;
       r += static_cast<int64_t>(gridDim.x) * warps) {
    const int64_t at = d.head(kO, r / d.T) + (r % d.T) * d.ld(kO);
    double acc = 0;
    for (int c = lane; c < d.hsv; c += 32)
      acc += static_cast<double>(dout[at + c]) * static_cast<double>(o[at + c]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) Dv[r] = static_cast<scalar_t>(acc);
  }
}

// P and dS of one entry from its masked score s and dP: entries that take no part (s = -inf:
// masked or additive -inf) and rows with no allowed key (lse = -inf) give 0.
template <typename scalar_t>
__device__ __forceinline__ void p_and_ds(scalar_t s, scalar_t dp, scalar_t lse, scalar_t Dr,
                                         scalar_t& p, scalar_t& ds) {
  const bool live = s != neg_inf<scalar_t>() && lse != neg_inf<scalar_t>();
  p = live ? d_exp(s - lse) : scalar_t(0);
  ds = live ? p * (dp - Dr) : scalar_t(0);
}

// Block: (b, h, query tile qt), as the forward (same layout). dq (B, NH, T, hs) = scale ·
// Σ_j dS_ij·k_j, with P recomputed from lse.
template <typename scalar_t, int D>
__global__ void __launch_bounds__(kThreads, kMinBlocks<scalar_t>)
    dq_kernel(scalar_t* dq, const scalar_t* dout, const scalar_t* q, const scalar_t* k,
              const scalar_t* v, const scalar_t* lse, const scalar_t* Dv, const int64_t* row_lo,
              const int64_t* row_hi, const int64_t* tile_lo, const int64_t* tile_hi, Dims d,
              scalar_t scale, MaskDesc m) {
  using C = BwdCfg<scalar_t, D>;
  constexpr int BR = C::BR, BC = C::BC, TM = BR / 16, TN = BC / 16, TD = D / 16;
  constexpr int RC = TM < 4 ? TM : 4, CC = TN < 4 ? TN : 4, CD = TD < 4 ? TD : 4;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  scalar_t* Qt = reinterpret_cast<scalar_t*>(smem_raw);  // (D, BR), k-major
  scalar_t* dOt = Qt + D * BR;                           // (D, BR), k-major
  scalar_t* Kt = dOt + D * BR;                           // (D, BC), k-major
  scalar_t* Vt = Kt + D * BC;                            // (D, BC), k-major
  scalar_t* Ks = Vt + D * BC;                            // (BC, D)
  scalar_t* dSt = Ks + BC * D;                           // (BC, BR): dS, key-major, swizzled
  const TileMask tm = carve_mask<BR, BC>(reinterpret_cast<unsigned char*>(dSt + BC * BR));

  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t nqt = (d.T + BR - 1) / BR;
  const int64_t bh = blockIdx.x % d.BH, qt = nqt - 1 - blockIdx.x / d.BH;
  const int64_t b = bh / d.NH, h = bh % d.NH, r0 = qt * BR;
  load_t<scalar_t, D, BR, BR>(Qt, q + d.head(kQ, bh), r0, d.T, d.hs, d.ld(kQ));
  load_t<scalar_t, D, BR, BR>(dOt, dout + d.head(kO, bh), r0, d.T, d.hsv, d.ld(kO));
  scalar_t lse_r[TM], D_r[TM], acc[TM][TD];
  zero(acc);
#pragma unroll
  for (int a = 0; a < TM; ++a) {
    const int64_t i = r0 + row_of<RC>(a, ty);
    lse_r[a] = i < d.T ? lse[bh * d.T + i] : neg_inf<scalar_t>();
    D_r[a] = i < d.T ? Dv[bh * d.T + i] : scalar_t(0);
  }
  // As the forward: the next tile's Kt, Vt load during dS·K, its Ks during the next S and dP.
  const scalar_t* kb = k + d.head(kK, bh);
  const scalar_t* vb = v + d.head(kV, bh);
  const int64_t khi = tile_hi[qt], c_first = tile_lo[qt] / BC * BC;
  if (c_first <= khi) {
    load_t<scalar_t, D, BC, BC, true>(Kt, kb, c_first, d.S, d.hs, d.ld(kK));
    load_t<scalar_t, D, BC, BC, true>(Vt, vb, c_first, d.S, d.hsv, d.ld(kV));
    cp_commit();
    load_rows<scalar_t, D, BC, D, true>(Ks, kb, c_first, d.S, d.hs, d.ld(kK));
    cp_commit();
  }
  for (int64_t c0 = c_first; c0 <= khi; c0 += BC) {
    const bool more = c0 + BC <= khi;
    cp_wait<1>();  // this tile's Kt and Vt
    const bool full =
        __syncthreads_and(load_mask<BR, BC>(tm, row_lo, row_hi, m, b, h, r0, c0, d.T, d.S));
    scalar_t s[TM][TN], dp[TM][TN];
    zero(s);
    zero(dp);
    mm<scalar_t, TM, RC, TN, CC, D, BR, BC>(s, Qt, Kt, ty, tx);
    mask_scores<false, BR, scalar_t, TM, RC, TN, CC>(s, full, m, tm, {r0, c0, h}, scale, ty, tx);
    mm<scalar_t, TM, RC, TN, CC, D, BR, BC>(dp, dOt, Vt, ty, tx);
#pragma unroll
    for (int a = 0; a < TM; ++a)
#pragma unroll
      for (int bb = 0; bb < TN; ++bb) {
        scalar_t p;
        p_and_ds(s[a][bb], dp[a][bb], lse_r[a], D_r[a], p, dp[a][bb]);  // dp becomes dS
      }
    store_t<scalar_t, TM, RC, TN, CC, BR, true>(dSt, dp, ty, tx);
    cp_wait<0>();  // this tile's Ks
    __syncthreads();
    if (more) {
      load_t<scalar_t, D, BC, BC, true>(Kt, kb, c0 + BC, d.S, d.hs, d.ld(kK));
      load_t<scalar_t, D, BC, BC, true>(Vt, vb, c0 + BC, d.S, d.hsv, d.ld(kV));
    }
    cp_commit();
    mm<scalar_t, TM, RC, TD, CD, BC, BR, D, CC>(acc, dSt, Ks, ty, tx);
    __syncthreads();
    if (more) load_rows<scalar_t, D, BC, D, true>(Ks, kb, c0 + BC, d.S, d.hs, d.ld(kK));
    cp_commit();
  }
#pragma unroll
  for (int a = 0; a < TM; ++a) {
    const int64_t i = r0 + row_of<RC>(a, ty);
    if (i >= d.T) continue;
#pragma unroll
    for (int c = 0; c < TD; ++c) {
      const int col = row_of<CD>(c, tx);
      if (col < d.hs) dq[d.head(kQ, bh) + i * d.ld(kQ) + col] = scale * acc[a][c];
    }
  }
}

// Block: (b, key/value head, key tile kt). dk (B, NKV, S, hs) = scale · Σ_h Σ_i dS_ijᵀ·q_i, dv =
// Σ_h Σ_i P_ijᵀ·dO_i over the group's query heads h (one without grouped-query attention) and the
// query tiles whose key range meets this key tile, in order. A thread owns keys row(a) and query
// rows (of a tile) / head columns col(b).
template <typename scalar_t, int D>
__global__ void __launch_bounds__(kThreads, kMinBlocks<scalar_t>)
    dkv_kernel(scalar_t* dk, scalar_t* dv, const scalar_t* dout, const scalar_t* q,
               const scalar_t* k, const scalar_t* v, const scalar_t* lse, const scalar_t* Dv,
               const int64_t* row_lo, const int64_t* row_hi, const int64_t* tile_lo,
               const int64_t* tile_hi, Dims d, scalar_t scale, MaskDesc m) {
  using C = BwdCfg<scalar_t, D>;
  constexpr int BR = C::BR, BC = C::BC, LC = C::LC, LK = C::LK;
  constexpr int TK = BC / 16, RC = TK < 4 ? TK : 4, TR = BR / 16, TD = D / 16;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  scalar_t* Kt = reinterpret_cast<scalar_t*>(smem_raw);  // (D, LC): the key tile, k-major
  scalar_t* Vt = Kt + D * LC;                            // (D, LC), k-major
  scalar_t* Qs = Vt + D * LC;                            // (BR, LK)
  scalar_t* dOs = Qs + BR * LK;                          // (BR, LK)
  scalar_t* Ps = dOs + BR * LK;                          // (BR, LC): P, query-major
  scalar_t* dSs = Ps + BR * LC;                          // (BR, LC)
  scalar_t* lse_s = dSs + BR * LC;
  scalar_t* D_s = lse_s + BR;
  const TileMask tm = carve_mask<BR, BC>(reinterpret_cast<unsigned char*>(D_s + BR));

  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t nqt = (d.T + BR - 1) / BR;
  const int64_t g = d.L.group(), units = d.BH / g, nkv = d.NH / g;
  const int64_t u = blockIdx.x % units, kt = blockIdx.x / units;
  const int64_t b = u / nkv, h0 = (u % nkv) * g, c0 = kt * BC;
  const int64_t c_last = imin(c0 + BC, d.S) - 1;
  const int64_t bh0 = b * d.NH + h0;  // the group's first query head: its k, v rows are the group's
  load_t<scalar_t, D, BC, LC>(Kt, k + d.head(kK, bh0), c0, d.S, d.hs, d.ld(kK));
  load_t<scalar_t, D, BC, LC>(Vt, v + d.head(kV, bh0), c0, d.S, d.hsv, d.ld(kV));
  scalar_t dk_acc[TK][TD], dv_acc[TK][TD];
  zero(dk_acc);
  zero(dv_acc);
  for (int64_t qh = 0; qh < g * nqt; ++qh) {
    const int64_t h = h0 + qh / nqt, bh = b * d.NH + h, qt = qh % nqt;
    if (tile_lo[qt] > c_last || tile_hi[qt] < c0) continue;  // uniform over the block
    const int64_t r0 = qt * BR;
    load_rows<scalar_t, D, BR, LK>(Qs, q + d.head(kQ, bh), r0, d.T, d.hs, d.ld(kQ));
    load_rows<scalar_t, D, BR, LK>(dOs, dout + d.head(kO, bh), r0, d.T, d.hsv, d.ld(kO));
    const bool full_part = load_mask<BR, BC>(tm, row_lo, row_hi, m, b, h, r0, c0, d.T, d.S);
    for (int r = threadIdx.x; r < BR; r += kThreads) {
      const int64_t i = r0 + r;
      lse_s[r] = i < d.T ? lse[bh * d.T + i] : neg_inf<scalar_t>();
      D_s[r] = i < d.T ? Dv[bh * d.T + i] : scalar_t(0);
    }
    const bool full = __syncthreads_and(full_part);
    scalar_t s[TK][TR], dp[TK][TR];  // transposed: keys × query rows
    zero(s);
    zero(dp);
    mm<scalar_t, TK, RC, TR, 1, D, LC, LK, 0, true>(s, Kt, Qs, ty, tx);
    mask_scores<true, BR, scalar_t, TK, RC, TR>(s, full, m, tm, {r0, c0, h}, scale, ty, tx);
    mm<scalar_t, TK, RC, TR, 1, D, LC, LK, 0, true>(dp, Vt, dOs, ty, tx);
#pragma unroll
    for (int a = 0; a < TK; ++a)
#pragma unroll
      for (int bb = 0; bb < TR; ++bb) {
        const int r = tx + 16 * bb;
        p_and_ds(s[a][bb], dp[a][bb], lse_s[r], D_s[r], s[a][bb], dp[a][bb]);  // P, dS
      }
    store_t<scalar_t, TK, RC, TR, 1, LC, false>(Ps, s, ty, tx);
    store_t<scalar_t, TK, RC, TR, 1, LC, false>(dSs, dp, ty, tx);
    __syncthreads();
    mm<scalar_t, TK, RC, TD, 1, BR, LC, LK>(dv_acc, Ps, dOs, ty, tx);
    mm<scalar_t, TK, RC, TD, 1, BR, LC, LK>(dk_acc, dSs, Qs, ty, tx);
    __syncthreads();
  }
#pragma unroll
  for (int a = 0; a < TK; ++a) {
    const int64_t j = c0 + row_of<RC>(a, ty);
    if (j > c_last) continue;
#pragma unroll
    for (int c = 0; c < TD; ++c) {
      const int col = tx + 16 * c;
      if (col < d.hs) dk[d.head(kK, bh0) + j * d.ld(kK) + col] = scale * dk_acc[a][c];
      if (col < d.hsv) dv[d.head(kV, bh0) + j * d.ld(kV) + col] = dv_acc[a][c];
    }
  }
}

// ---- the position biases' gradients ----
// Both biases depend on the diagonal δ = j - i' alone (MaskDesc::rel, alibi), so their gradients
// are sums over diagonals of dS: diag[bh][δ - diag_lo] = Σ_i dS(i, i' + δ), T + S - 1 values per
// head, O(T + S) memory. Block: (bh, chunk of kDiagW diagonals); it walks the query rows in tiles
// of kDiagRows (skipping tiles whose key ranges miss its diagonals), with the tile's q and dO rows
// and the kDiagRows + kDiagW - 1 keys its diagonals reach in shared memory. Thread (group g,
// diagonal c) scores rows g, g + 4, .. of each tile as the tile kernels do (structure, key flags,
// bool and additive parts, biases; P from lse, dS = P·(dP - D)) and sums them in order; the four
// groups are then added in order: deterministic, no atomics.
constexpr int kDiagW = 64, kDiagRows = 16, kDiagGroups = kThreads / kDiagW;
template <typename scalar_t, int D>
constexpr size_t diag_smem() {
  return (2 * kDiagRows + 2 * (kDiagRows + kDiagW - 1)) * (D + 1) * sizeof(scalar_t);
}
template <typename scalar_t, int D>
__global__ void __launch_bounds__(kThreads)
    bias_diag_kernel(double* diag, const scalar_t* dout, const scalar_t* q, const scalar_t* k,
                     const scalar_t* v, const scalar_t* lse, const scalar_t* Dv,
                     const int64_t* row_lo, const int64_t* row_hi, Dims d, scalar_t scale,
                     MaskDesc m) {
  constexpr int LK = D + 1, NK = kDiagRows + kDiagW - 1;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  scalar_t* Qs = reinterpret_cast<scalar_t*>(smem_raw);  // (kDiagRows, LK)
  scalar_t* dOs = Qs + kDiagRows * LK;                   // (kDiagRows, LK)
  scalar_t* Ks = dOs + kDiagRows * LK;                   // (NK, LK): keys j0 ..
  scalar_t* Vs = Ks + NK * LK;                           // (NK, LK)
  __shared__ double part[kThreads];
  const int64_t ndiag = d.T + d.S - 1;
  const int64_t bh = blockIdx.x % d.BH, chunk = blockIdx.x / d.BH;
  const int64_t b = bh / d.NH, h = bh % d.NH;
  const int c = threadIdx.x % kDiagW, g = threadIdx.x / kDiagW;
  const int64_t d0 = m.diag_lo + chunk * kDiagW;  // the block's first diagonal
  const scalar_t* add = static_cast<const scalar_t*>(m.additive);
  const int64_t *sa = m.allowed_stride, *sd = m.additive_stride;
  double acc = 0;
  for (int64_t r0 = 0; r0 < d.T; r0 += kDiagRows) {
    bool meets = false;  // some row of the tile has an allowed key on the block's diagonals
    if (threadIdx.x < kDiagRows && r0 + threadIdx.x < d.T) {
      const int64_t i = r0 + threadIdx.x, a = i + m.shift + d0;
      meets = imax(a, row_lo[i]) <= imin(a + kDiagW - 1, row_hi[i]);
    }
    if (!__syncthreads_or(meets)) continue;
    const int64_t j0 = r0 + m.shift + d0;  // row r0's key on diagonal d0: Ks row 0
    load_rows<scalar_t, D, kDiagRows, LK>(Qs, q + d.head(kQ, bh), r0, d.T, d.hs, d.ld(kQ));
    load_rows<scalar_t, D, kDiagRows, LK>(dOs, dout + d.head(kO, bh), r0, d.T, d.hsv, d.ld(kO));
    load_rows<scalar_t, D, NK, LK>(Ks, k + d.head(kK, bh), j0, d.S, d.hs, d.ld(kK));
    load_rows<scalar_t, D, NK, LK>(Vs, v + d.head(kV, bh), j0, d.S, d.hsv, d.ld(kV));
    __syncthreads();
    for (int r = g; r < kDiagRows && r0 + r < d.T; r += kDiagGroups) {
      const int64_t i = r0 + r, j = j0 + r + c;
      if (j < row_lo[i] || j > row_hi[i]) continue;  // within [0, S) when allowed
      if (m.key_allowed && !m.key_allowed[b * d.S + j]) continue;
      if (m.key_lengths && j >= m.key_lengths[b]) continue;
      if (m.allowed && !m.allowed[b * sa[0] + h * sa[1] + i * sa[2] + j * sa[3]]) continue;
      scalar_t qk = 0, dp = 0;
      for (int x = 0; x < D; ++x) qk += Qs[r * LK + x] * Ks[(r + c) * LK + x];
      for (int x = 0; x < D; ++x) dp += dOs[r * LK + x] * Vs[(r + c) * LK + x];
      const double a =
          add ? static_cast<double>(add[b * sd[0] + h * sd[1] + i * sd[2] + j * sd[3]]) : 0.0;
      const scalar_t sc = with_biases(m, qk * scale, a, h, i, j);
      scalar_t p, ds;
      p_and_ds(sc, dp, lse[bh * d.T + i], Dv[bh * d.T + i], p, ds);
      acc += static_cast<double>(ds);
    }
    __syncthreads();
  }
  part[threadIdx.x] = acc;
  __syncthreads();
  if (g != 0 || chunk * kDiagW + c >= ndiag) return;
  double sum = 0;
  for (int q = 0; q < kDiagGroups; ++q) sum += part[q * kDiagW + c];
  diag[bh * ndiag + chunk * kDiagW + c] = sum;
}

// d_rel (BH, rel_n) and d_alibi (BH) from the diagonal sums: a thread per (bh, bucket), and per
// bh for the slopes, each summing its diagonals in order (dS times the bias's derivative: 1 for
// the diagonal's bucket, -|δ| for the slope).
__global__ void bias_reduce_kernel(double* d_rel, double* d_alibi, const double* diag, int64_t BH,
                                   int64_t ndiag, MaskDesc m) {
  const int64_t nrel = d_rel ? m.rel_n : 0, per = nrel + (d_alibi ? 1 : 0);
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < BH * per;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t bh = t / per, w = t % per;
    const double* dg = diag + bh * ndiag;
    double sum = 0;
    if (w < nrel) {
      for (int64_t e = 0; e < ndiag; ++e)
        if (m.rel_bucket[e] == w) sum += dg[e];
      d_rel[bh * nrel + w] = sum;
    } else {
      for (int64_t e = 0; e < ndiag; ++e) {
        const int64_t dd = m.diag_lo + e;
        sum -= static_cast<double>(dd < 0 ? -dd : dd) * dg[e];
      }
      d_alibi[bh] = sum;
    }
  }
}

// ---- host side ----
using detail::DeviceBuffer;

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

// Lets kernel use `bytes` of dynamic shared memory (above the default 48 KiB).
template <typename K>
void allow_smem(K kernel, size_t bytes) {
  TG_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(bytes)));
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
  using C = FwdCfg<scalar_t, D>;
  static_assert(C::kSmem <= kMaxSmem, "forward tiles exceed shared memory");
  const int64_t nqt = (d.T + C::BR - 1) / C::BR;
  Plan plan(d.T, nqt);
  launch_plan<C::BR>(plan, m, d.T, d.S, nqt);
  allow_smem(fwd_kernel<scalar_t, D>, C::kSmem);
  fwd_kernel<scalar_t, D>
      <<<grid_size(d.BH * nqt, "attention_forward"), kThreads, C::kSmem, detail::cur_stream()>>>(
          o, lse, q, k, v, plan.row_lo, plan.row_hi, plan.tile_lo, plan.tile_hi, d,
          static_cast<scalar_t>(scale), m);
  TG_CUDA_LAUNCH_CHECK("attention fwd_kernel");
}

template <typename scalar_t, int D>
void run_backward(scalar_t* dq, scalar_t* dk, scalar_t* dv, double* d_rel, double* d_alibi,
                  const scalar_t* dout, const scalar_t* q, const scalar_t* k, const scalar_t* v,
                  const scalar_t* o, const scalar_t* lse, const Dims& d, double scale,
                  const MaskDesc& m) {
  using C = BwdCfg<scalar_t, D>;
  static_assert(C::kSmemDq <= kMaxSmem && C::kSmemDkv <= kMaxSmem, "backward tiles too large");
  const int64_t nqt = (d.T + C::BR - 1) / C::BR, nkt = (d.S + C::BC - 1) / C::BC;
  const scalar_t sc = static_cast<scalar_t>(scale);
  Plan plan(d.T, nqt);
  launch_plan<C::BR>(plan, m, d.T, d.S, nqt);
  DeviceBuffer Dbuf(static_cast<size_t>(d.BH * d.T) * sizeof(scalar_t));
  scalar_t* Dv = Dbuf.as<scalar_t>();
  if (d.T > 0) {
    dot_kernel<scalar_t>
        <<<detail::grid_for(d.BH * d.T, 8), 256, 0, detail::cur_stream()>>>(Dv, dout, o, d);
    TG_CUDA_LAUNCH_CHECK("attention dot_kernel");
    allow_smem(dq_kernel<scalar_t, D>, C::kSmemDq);
    dq_kernel<scalar_t, D><<<grid_size(d.BH * nqt, "attention_backward"), kThreads, C::kSmemDq,
                             detail::cur_stream()>>>(
        dq, dout, q, k, v, lse, Dv, plan.row_lo, plan.row_hi, plan.tile_lo, plan.tile_hi, d, sc, m);
    TG_CUDA_LAUNCH_CHECK("attention dq_kernel");
  }
  if (d.S > 0) {
    allow_smem(dkv_kernel<scalar_t, D>, C::kSmemDkv);
    dkv_kernel<scalar_t, D>
        <<<grid_size(d.BH / d.L.group() * nkt, "attention_backward"), kThreads, C::kSmemDkv,
           detail::cur_stream()>>>(dk, dv, dout, q, k, v, lse, Dv, plan.row_lo, plan.row_hi,
                                   plan.tile_lo, plan.tile_hi, d, sc, m);
    TG_CUDA_LAUNCH_CHECK("attention dkv_kernel");
  }
  if ((!d_rel && !d_alibi) || d.T == 0 || d.S == 0) return;
  // the position biases' gradients, from the same plan rows and D
  constexpr size_t smem = diag_smem<scalar_t, D>();
  static_assert(smem <= kMaxSmem, "bias gradient tiles exceed shared memory");
  const int64_t ndiag = d.T + d.S - 1, chunks = (ndiag + kDiagW - 1) / kDiagW;
  DeviceBuffer diag(static_cast<size_t>(d.BH * ndiag) * sizeof(double));
  allow_smem(bias_diag_kernel<scalar_t, D>, smem);
  bias_diag_kernel<scalar_t, D>
      <<<grid_size(d.BH * chunks, "attention_backward"), kThreads, smem, detail::cur_stream()>>>(
          diag.as<double>(), dout, q, k, v, lse, Dv, plan.row_lo, plan.row_hi, d, sc, m);
  TG_CUDA_LAUNCH_CHECK("attention bias_diag_kernel");
  const int64_t per = (d_rel ? m.rel_n : 0) + (d_alibi ? 1 : 0);
  bias_reduce_kernel<<<detail::grid_for(d.BH * per, 256), 256, 0, detail::cur_stream()>>>(
      d_rel, d_alibi, diag.as<double>(), d.BH, ndiag, m);
  TG_CUDA_LAUNCH_CHECK("attention bias_reduce_kernel");
}

}  // namespace

namespace {
Dims dims(const AttentionLayout& L) {
  return Dims{L.B * L.NH, L.NH, L.T, L.S, static_cast<int>(L.hs), static_cast<int>(L.hsv), L};
}
}  // namespace

void attention_forward(DT dt, void* o, void* lse, const void* q, const void* k, const void* v,
                       const AttentionLayout& L, double scale, const MaskDesc& mask) {
  const Dims d = dims(L);
  const int64_t hs = L.hs, hs_v = L.hsv;
  if (d.BH == 0 || d.T == 0) return;
  TG_DISPATCH_FLOAT(dt, "attention_forward", [&] {
    dispatch_head(hs, hs_v, "attention_forward", [&](auto dc) {
      run_forward<scalar_t, decltype(dc)::value>(
          static_cast<scalar_t*>(o), static_cast<scalar_t*>(lse), static_cast<const scalar_t*>(q),
          static_cast<const scalar_t*>(k), static_cast<const scalar_t*>(v), d, scale, mask);
    });
  });
}

void attention_backward(DT dt, void* dq, void* dk, void* dv, double* d_rel, double* d_alibi,
                        const void* dout, const void* q, const void* k, const void* v,
                        const void* o, const void* lse, const AttentionLayout& L, double scale,
                        const MaskDesc& mask) {
  const Dims d = dims(L);
  const int64_t hs = L.hs, hs_v = L.hsv;
  if (d.BH == 0) return;
  TG_DISPATCH_FLOAT(dt, "attention_backward", [&] {
    dispatch_head(hs, hs_v, "attention_backward", [&](auto dc) {
      run_backward<scalar_t, decltype(dc)::value>(
          static_cast<scalar_t*>(dq), static_cast<scalar_t*>(dk), static_cast<scalar_t*>(dv), d_rel,
          d_alibi, static_cast<const scalar_t*>(dout), static_cast<const scalar_t*>(q),
          static_cast<const scalar_t*>(k), static_cast<const scalar_t*>(v),
          static_cast<const scalar_t*>(o), static_cast<const scalar_t*>(lse), d, scale, mask);
    });
  });
}

}  // namespace tg::cuda
