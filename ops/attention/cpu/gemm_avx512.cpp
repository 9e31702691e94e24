// ops/attention/cpu/gemm_avx512.cpp — the fused CPU attention's float32 GEMMs on AVX-512 (16-float
// batches): a register-blocked kernel for the attention's shapes, where one side of every product
// is a head size (hs or hs_v: 16 to 128) and OpenBLAS's generic sgemm loses its time around the
// arithmetic (packing both operands on every call, zeroing C before accumulating into it).
// ops/attention/cpu/fused.cpp packs each head's operands once (contiguous rows, or transposed), so
// B is always contiguous here. These fill the AVX-512 table's attention slots (ops/core/cpu/isa.hpp),
// chosen only when the CPU has AVX-512 F/CD/DQ/BW/VL (cpu::simd_kernels()); their speed against
// OpenBLAS: docs/cpu-kernels.md. Built with AVX-512 flags (ops/CMakeLists.txt); compiles to
// nothing without them. No inline std:: algorithm here (see ops/softmax/cpu/softmax_rows.hpp for why).
#if defined(__AVX512F__) && defined(__AVX512CD__) && defined(__AVX512DQ__) && \
    defined(__AVX512BW__) && defined(__AVX512VL__)
#include "ops/core/cpu/isa.hpp"

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include <cstdint>

namespace tg::cpu::avx512 {
namespace {
using V = xsimd::batch<float, xsimd::avx512bw>;
constexpr int64_t L = 16;  // floats per batch

// The last batch's lanes inside N (all 16 unless N is not a multiple of 16).
__mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>(n >= L ? 0xFFFF : (1u << n) - 1u); }

// C[r][0, NV·16) for r < MR (the last batch masked by `last`) = alpha·Σ_k A(r, k)·B(k, ·)
// (+ C when acc), except keys[n] where keys (a key mask row: 0, or -inf for a blocked key) is not
// 0: a select, so that a NaN or inf score of a blocked key leaves no trace. MR·NV accumulators stay
// in registers over the whole K loop.
template <int MR, int NV, bool FULL>
void micro(int64_t K, float alpha, const float* A, int64_t am, int64_t ak, const float* B,
           int64_t ldb, const float* keys, bool acc, float* C, int64_t ldc, __mmask16 last) {
  V c[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) {
      c[r][v] = V(0.f);
      _mm_prefetch(reinterpret_cast<const char*>(C + r * ldc + v * L), _MM_HINT_ET0);
    }
  for (int64_t k = 0; k < K; ++k) {
    const float* bk = B + k * ldb;
    V b[NV];
    for (int v = 0; v < NV - 1; ++v) b[v] = V::load_unaligned(bk + v * L);
    if constexpr (FULL)
      b[NV - 1] = V::load_unaligned(bk + (NV - 1) * L);
    else
      b[NV - 1] = _mm512_maskz_loadu_ps(last, bk + (NV - 1) * L);
    const float* ak_ = A + k * ak;
    for (int r = 0; r < MR; ++r) {
      const V a(ak_[r * am]);
      for (int v = 0; v < NV; ++v) c[r][v] = xsimd::fma(a, b[v], c[r][v]);
    }
  }
  const V va(alpha);
  __m512 kv[NV];
  __mmask16 blocked[NV];  // lanes whose key mask entry is not 0 (-inf): C takes that entry there
  if (keys)
    for (int v = 0; v < NV; ++v) {
      kv[v] =
          _mm512_maskz_loadu_ps(v == NV - 1 ? last : static_cast<__mmask16>(0xFFFF), keys + v * L);
      blocked[v] = _mm512_cmp_ps_mask(kv[v], _mm512_setzero_ps(), _CMP_NEQ_UQ);
    }
  for (int r = 0; r < MR; ++r) {
    float* cr = C + r * ldc;
    for (int v = 0; v < NV; ++v) {
      const __mmask16 m = v == NV - 1 ? last : static_cast<__mmask16>(0xFFFF);
      V x = c[r][v] * va;
      if (keys) x = _mm512_mask_mov_ps(x, blocked[v], kv[v]);
      if (acc) x = x + V(_mm512_maskz_loadu_ps(m, cr + v * L));
      _mm512_mask_storeu_ps(cr + v * L, m, x);
    }
  }
}

// Rows per block for NV batches: as many accumulators as fit beside the B batches (32 zmm).
template <int NV>
constexpr int kRows = NV == 1   ? 12
                      : NV == 2 ? 12
                      : NV == 3 ? 8
                                : 6;

// Rows per block when A is packed (any NV): A's blocks then hold kPackRows rows, interleaved.
constexpr int kPackRows = 6;

// All M rows of one panel of NV batches (columns n0 .. n0 + 16·NV, the last masked), in blocks of
// MR rows; block m starts at A + m·a_row, and A(r, k) inside it at [r·am + k·ak].
template <int NV, bool FULL, int MR>
void panel(int64_t M, int64_t K, float alpha, const float* A, int64_t a_row, int64_t am, int64_t ak,
           const float* B, int64_t ldb, const float* keys, bool acc, float* C, int64_t ldc,
           __mmask16 last) {
  int64_t m = 0;
  for (; m + MR <= M; m += MR)
    micro<MR, NV, FULL>(K, alpha, A + m * a_row, am, ak, B, ldb, keys, acc, C + m * ldc, ldc, last);
  const float* a = A + m * a_row;
  float* c = C + m * ldc;
  switch (M - m) {  // the remainder, one block of fewer rows
#define TG_REST(R)                                                              \
  case R:                                                                       \
    if constexpr (R < MR)                                                       \
      micro<R, NV, FULL>(K, alpha, a, am, ak, B, ldb, keys, acc, c, ldc, last); \
    break;
    TG_REST(1)
    TG_REST(2)
    TG_REST(3)
    TG_REST(4)
    TG_REST(5)
    TG_REST(6)
    TG_REST(7)
    TG_REST(8)
    TG_REST(9)
    TG_REST(10)
    TG_REST(11)
#undef TG_REST
    default:
      break;
  }
}

// One panel of nv batches; with packed A (a_row = K, am = 1, ak = kPackRows) in kPackRows blocks.
void panel_n(int nv, bool packed, int64_t M, int64_t K, float alpha, const float* A, int64_t a_row,
             int64_t am, int64_t ak, const float* B, int64_t ldb, const float* keys, bool acc,
             float* C, int64_t ldc, __mmask16 last) {
  const bool full = last == 0xFFFF;
#define TG_PANEL(NV)                                                                               \
  case NV:                                                                                         \
    if (packed)                                                                                    \
      return full ? panel<NV, true, kPackRows>(M, K, alpha, A, a_row, am, ak, B, ldb, keys, acc,   \
                                               C, ldc, last)                                       \
                  : panel<NV, false, kPackRows>(M, K, alpha, A, a_row, am, ak, B, ldb, keys, acc,  \
                                                C, ldc, last);                                     \
    return full ? panel<NV, true, kRows<NV>>(M, K, alpha, A, a_row, am, ak, B, ldb, keys, acc, C,  \
                                             ldc, last)                                            \
                : panel<NV, false, kRows<NV>>(M, K, alpha, A, a_row, am, ak, B, ldb, keys, acc, C, \
                                              ldc, last);
  switch (nv) {
    TG_PANEL(1)
    TG_PANEL(2)
    TG_PANEL(3)
    default:
      TG_PANEL(4)
  }
#undef TG_PANEL
}
}  // namespace

// C (M, N) = alpha·Σ_k A(m, k)·B(k, n) (+ C when acc), except C[·][n] = keys[n] where keys is
// given and keys[n] != 0; A(m, k) at A[m·am + k·ak], B's row k contiguous at B + k·ldb, C's rows
// ldc apart. Panels of 64 columns (4
// batches), each over all rows, so one panel of B (K × 64) stays near while A streams. As BLAS
// does, operands that would be read with long strides are first copied into the caller's scratch
// (see attention_gemm_f32): a panel of B whose rows lie 1 KiB or more apart (their lines crowd a
// few L1 sets), when several row blocks reuse it; and A read down its columns (ak > 1, e.g. Pᵀ),
// when several panels reuse it, into blocks of kPackRows rows interleaved (A(r, k) at [k·kPackRows
// + r]).
void gemm_f32(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t am, int64_t ak,
              const float* B, int64_t ldb, const float* keys, bool acc, float* C, int64_t ldc,
              float* bpack, float* apack) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // an empty sum: C = 0 (or unchanged), blocked keys as above
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        float& c = C[m * ldc + n];
        c = keys && keys[n] != 0.f ? keys[n] : acc ? c : 0.f;
      }
    return;
  }
  constexpr int64_t kPanel = 4 * L;
  const bool pack_b = bpack && ldb >= 256 && M > kRows<4>;
  const bool pack_a = apack && ak > 1 && N > kPanel;
  int64_t a_row = am;
  if (pack_a) {
    for (int64_t m0 = 0; m0 < M; m0 += kPackRows) {
      const int64_t nr = M - m0 < kPackRows ? M - m0 : kPackRows;
      float* blk = apack + m0 * K;
      if (am ==
          1) {  // the block's rows are nr contiguous floats of each stored row: one masked move
        const __mmask16 m = tail_mask(nr);
        for (int64_t k = 0; k < K; ++k)
          _mm512_mask_storeu_ps(blk + k * kPackRows, m, _mm512_maskz_loadu_ps(m, A + m0 + k * ak));
      } else {
        for (int64_t k = 0; k < K; ++k)
          for (int64_t r = 0; r < nr; ++r) blk[k * kPackRows + r] = A[(m0 + r) * am + k * ak];
      }
    }
    A = apack, a_row = K, am = 1, ak = kPackRows;
  }
  for (int64_t n0 = 0; n0 < N; n0 += kPanel) {
    const int64_t w = N - n0 < kPanel ? N - n0 : kPanel;
    const int nv = static_cast<int>((w + L - 1) / L);
    const __mmask16 last = tail_mask(w - (nv - 1) * L);
    const float* b = B + n0;
    int64_t lb = ldb;
    if (pack_b) {
      for (int64_t k = 0; k < K; ++k)
        for (int v = 0; v < nv; ++v) {
          const __mmask16 m = v == nv - 1 ? last : static_cast<__mmask16>(0xFFFF);
          _mm512_storeu_ps(bpack + k * kPanel + v * L,
                           _mm512_maskz_loadu_ps(m, B + k * ldb + n0 + v * L));
        }
      b = bpack, lb = kPanel;
    }
    panel_n(nv, pack_a, M, K, alpha, A, a_row, am, ak, b, lb, keys ? keys + n0 : nullptr, acc,
            C + n0, ldc, last);
  }
}

namespace {
// r[0..16) (16 rows of 16) transposed in registers: unpack pairs of rows, then pairs of pairs,
// then 128-bit lanes across groups of 4 and 8 rows.
void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  auto lo = [](__m512 a, __m512 b) {
    return _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
  };
  auto hi = [](__m512 a, __m512 b) {
    return _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
  };
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = lo(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = hi(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = lo(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = hi(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0x88);
    t[4 + i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0xdd);
    t[8 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0x88);
    t[12 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0xdd);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xdd);
    r[4 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0x88);
    r[12 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0xdd);
  }
}
}  // namespace

// dst (cols, rows), rows ldd apart = src (rows, cols), rows lds apart, transposed: 16 × 16 blocks
// in registers (edge blocks masked).
void transpose_f32(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
                   int64_t ldd) {
  for (int64_t r0 = 0; r0 < rows; r0 += L) {
    const int64_t nr = rows - r0 < L ? rows - r0 : L;
    const __mmask16 rm = tail_mask(nr);
    for (int64_t c0 = 0; c0 < cols; c0 += L) {
      const int64_t nc = cols - c0 < L ? cols - c0 : L;
      const __mmask16 cm = tail_mask(nc);
      __m512 r[16];
      const float* s = src + r0 * lds + c0;
      for (int64_t i = 0; i < L; ++i)
        r[i] = i < nr ? (cm == 0xFFFF ? _mm512_loadu_ps(s + i * lds)
                                      : _mm512_maskz_loadu_ps(cm, s + i * lds))
                      : _mm512_setzero_ps();
      transpose16(r);
      float* d = dst + c0 * ldd + r0;
      for (int64_t p = 0; p < nc; ++p) {
        if (rm == 0xFFFF)
          _mm512_storeu_ps(d + p * ldd, r[p]);
        else
          _mm512_mask_storeu_ps(d + p * ldd, rm, r[p]);
      }
    }
  }
}

}  // namespace tg::cpu::avx512

namespace tg::cpu::isa::avx512 {
void fill_attention(Table& t) {
  t.attention_gemm_f32 = cpu::avx512::gemm_f32;
  t.attention_transpose_f32 = cpu::avx512::transpose_f32;
}
}  // namespace tg::cpu::isa::avx512
#endif
