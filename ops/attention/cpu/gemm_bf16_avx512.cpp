// ops/attention/cpu/gemm_bf16_avx512.cpp — the fused CPU attention's products in bfloat16 on
// AVX512-BF16: the contract of gemm_avx512.cpp's float32 kernel (attention_gemm_f32: float32
// operands, float32 C, the key-mask select), but every operand is rounded to bfloat16 (round to
// nearest even, NaN kept a NaN: autograd/half.hpp's float_to_bf16, except that subnormal floats
// read as 0, as vdpbf16ps reads subnormal operands) while it is packed, and the products run on
// vdpbf16ps (pairs along K, float32 accumulation). B is packed per panel
// of 64 columns into K-pair-interleaved bfloat16 (lane n of pair p holds B(2p, n) and
// B(2p + 1, n)); A into bfloat16 pairs (A(m, 2p), A(m, 2p + 1)) broadcast as one 32-bit word:
// rows as they are, or, read down its columns, in blocks of kPackRows rows interleaved. An odd K
// gets a zero pair partner. Both are packed once per call into the caller's scratch (sizes:
// gemm_bf16's comment). Fills the table slot attention_gemm_bf16 (ops/core/cpu/isa.hpp), which
// isa.cpp fills only where the CPU has AVX512-BF16. Built with -mavx512bf16 (ops/CMakeLists.txt);
// without that flag the slot stays empty. No std:: template here (tests/ops/avx512_symbols.cmake).
#if defined(__AVX512F__) && defined(__AVX512CD__) && defined(__AVX512DQ__) && \
    defined(__AVX512BW__) && defined(__AVX512VL__)
#include "ops/core/cpu/isa.hpp"

#include <immintrin.h>

#include <cstdint>

#if defined(__AVX512BF16__)
namespace tg::cpu::avx512_bf16 {
namespace {
constexpr int64_t L = 16;          // float32 lanes per register
constexpr int64_t kPanel = 4 * L;  // columns per B panel
constexpr int kPackRows = 6;       // rows per block of A read down its columns

__mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>(n >= L ? 0xFFFF : (1u << n) - 1u); }

// The 32-bit pair words of two vectors rounded to bfloat16 (vcvtne2ps2bf16: round to nearest
// even, a NaN quiet; it reads subnormal floats as 0, as vdpbf16ps reads subnormal bfloat16
// operands anyway), lo in the low half: the 16-bit halves interleaved.
__m512i pair(__m512 lo, __m512 hi) {
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                       23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}
uint32_t pair1(float lo, float hi) {
  return static_cast<uint32_t>(
      _mm_cvtsi128_si32(_mm512_castsi512_si128(pair(_mm512_set1_ps(lo), _mm512_set1_ps(hi)))));
}

// C[r][0, NV·16) for r < MR (the last batch masked by `last`) = alpha·Σ_p A2(r, p)·B2(p, ·)
// (+ C when acc), A2(r, p) the pair word at A[r·am + p·ak], B2's pair row p at B + p·kPanel; keys
// as in gemm_avx512.cpp (a select: NaN or inf scores of blocked keys leave no trace).
template <int MR, int NV>
void micro(int64_t K2, float alpha, const uint32_t* A, int64_t am, int64_t ak, const uint32_t* B,
           const float* keys, bool acc, float* C, int64_t ldc, __mmask16 last) {
  __m512 c[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) c[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < K2; ++p) {
    __m512bh b[NV];
    for (int v = 0; v < NV; ++v) b[v] = (__m512bh)_mm512_loadu_si512(B + p * kPanel + v * L);
    const uint32_t* ap = A + p * ak;
    for (int r = 0; r < MR; ++r) {
      const __m512bh a = (__m512bh)_mm512_set1_epi32(static_cast<int>(ap[r * am]));
      for (int v = 0; v < NV; ++v) c[r][v] = _mm512_dpbf16_ps(c[r][v], a, b[v]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha);
  __m512 kv[NV];
  __mmask16 blocked[NV];
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
      __m512 x = _mm512_mul_ps(c[r][v], va);
      if (keys) x = _mm512_mask_mov_ps(x, blocked[v], kv[v]);
      if (acc) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, cr + v * L));
      _mm512_mask_storeu_ps(cr + v * L, m, x);
    }
  }
}

// Rows per block for NV batches with A by rows (as gemm_avx512.cpp: accumulators beside B).
template <int NV>
constexpr int kRows = NV <= 2   ? 12
                      : NV == 3 ? 8
                                : 6;

// All M rows of one panel, in blocks of MR rows (block m at A + m·a_row), the rest in one block.
template <int NV, int MR>
void panel(int64_t M, int64_t K2, float alpha, const uint32_t* A, int64_t a_row, int64_t am,
           int64_t ak, const uint32_t* B, const float* keys, bool acc, float* C, int64_t ldc,
           __mmask16 last) {
  int64_t m = 0;
  for (; m + MR <= M; m += MR)
    micro<MR, NV>(K2, alpha, A + m * a_row, am, ak, B, keys, acc, C + m * ldc, ldc, last);
  const uint32_t* a = A + m * a_row;
  float* c = C + m * ldc;
  switch (M - m) {
#define TG_REST(R)                                                                        \
  case R:                                                                                 \
    if constexpr (R < MR) micro<R, NV>(K2, alpha, a, am, ak, B, keys, acc, c, ldc, last); \
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

void panel_n(int nv, bool blocks, int64_t M, int64_t K2, float alpha, const uint32_t* A,
             int64_t a_row, int64_t am, int64_t ak, const uint32_t* B, const float* keys, bool acc,
             float* C, int64_t ldc, __mmask16 last) {
#define TG_PANEL(NV)                                                                           \
  case NV:                                                                                     \
    if (blocks)                                                                                \
      return panel<NV, kPackRows>(M, K2, alpha, A, a_row, am, ak, B, keys, acc, C, ldc, last); \
    return panel<NV, kRows<NV>>(M, K2, alpha, A, a_row, am, ak, B, keys, acc, C, ldc, last);
  switch (nv) {
    TG_PANEL(1)
    TG_PANEL(2)
    TG_PANEL(3)
    default:
      TG_PANEL(4)
  }
#undef TG_PANEL
}

// A (M, K) by rows (ak = 1) as pair words, row m at out + m·K2.
void pack_a_rows(int64_t M, int64_t K, const float* A, int64_t am, uint32_t* out) {
  const int64_t K2 = (K + 1) / 2;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k0 = 0; k0 < K; k0 += L) {
      const int64_t n = K - k0 < L ? K - k0 : L;
      const __m256i r =
          (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(tail_mask(n), A + m * am + k0));
      _mm256_mask_storeu_epi32(out + m * K2 + k0 / 2,
                               static_cast<__mmask8>((1u << ((n + 1) / 2)) - 1u), r);
    }
}
// A (M, K) read down its columns (ak > 1) as pair words in blocks of kPackRows rows: A2(m0 + r, p)
// at out + m0·K2 + p·kPackRows + r.
void pack_a_blocks(int64_t M, int64_t K, const float* A, int64_t am, int64_t ak, uint32_t* out) {
  const int64_t K2 = (K + 1) / 2;
  for (int64_t m0 = 0; m0 < M; m0 += kPackRows) {
    const int64_t nr = M - m0 < kPackRows ? M - m0 : kPackRows;
    uint32_t* blk = out + m0 * K2;
    if (am == 1) {
      const __mmask16 msk = tail_mask(nr);
      for (int64_t p = 0; p < K2; ++p) {
        const __m512 lo = _mm512_maskz_loadu_ps(msk, A + m0 + 2 * p * ak);
        const __m512 hi = 2 * p + 1 < K ? _mm512_maskz_loadu_ps(msk, A + m0 + (2 * p + 1) * ak)
                                        : _mm512_setzero_ps();
        _mm512_mask_storeu_epi32(blk + p * kPackRows, msk, pair(lo, hi));
      }
      continue;
    }
    for (int64_t p = 0; p < K2; ++p)
      for (int64_t r = 0; r < nr; ++r) {
        const float* a = A + (m0 + r) * am + 2 * p * ak;
        blk[p * kPackRows + r] = pair1(a[0], 2 * p + 1 < K ? a[ak] : 0.f);
      }
  }
}
// Columns n0 .. n0 + w of B (K rows, ldb apart) as pair rows of kPanel words (zero past w).
void pack_b(int64_t K, const float* B, int64_t ldb, int64_t w, uint32_t* out) {
  const int64_t K2 = (K + 1) / 2;
  for (int64_t p = 0; p < K2; ++p)
    for (int64_t v = 0; v < kPanel / L; ++v) {
      const int64_t n = w - v * L;
      const __mmask16 msk = n <= 0 ? 0 : tail_mask(n);
      const float* b = B + 2 * p * ldb + v * L;
      const __m512 lo = _mm512_maskz_loadu_ps(msk, b);
      const __m512 hi = 2 * p + 1 < K ? _mm512_maskz_loadu_ps(msk, b + ldb) : _mm512_setzero_ps();
      _mm512_storeu_si512(out + p * kPanel + v * L, pair(lo, hi));
    }
}
}  // namespace

// C (M, N) = alpha·Σ_k bf16(A(m, k))·bf16(B(k, n)) (+ C when acc), float32 accumulation, except
// C[·][n] = keys[n] where keys[n] != 0; layouts as gemm_avx512.cpp's gemm_f32. Scratch, both
// required: bpack ⌈K/2⌉·64 floats, apack ⌈M/6⌉·6·⌈K/2⌉ floats (bf16_scratch in
// ops/attention/cpu/fused.cpp sizes them).
void gemm_bf16(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t am, int64_t ak,
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
  const int64_t K2 = (K + 1) / 2;
  uint32_t* ap = reinterpret_cast<uint32_t*>(apack);
  uint32_t* bp = reinterpret_cast<uint32_t*>(bpack);
  const bool blocks = ak != 1;
  if (blocks)
    pack_a_blocks(M, K, A, am, ak, ap);
  else
    pack_a_rows(M, K, A, am, ap);
  const int64_t a_row = K2, am2 = blocks ? 1 : K2, ak2 = blocks ? kPackRows : 1;
  for (int64_t n0 = 0; n0 < N; n0 += kPanel) {
    const int64_t w = N - n0 < kPanel ? N - n0 : kPanel;
    const int nv = static_cast<int>((w + L - 1) / L);
    pack_b(K, B + n0, ldb, w, bp);
    panel_n(nv, blocks, M, K2, alpha, ap, a_row, am2, ak2, bp, keys ? keys + n0 : nullptr, acc,
            C + n0, ldc, tail_mask(w - (nv - 1) * L));
  }
}
}  // namespace tg::cpu::avx512_bf16
#endif

namespace tg::cpu::isa::avx512 {
void fill_attention_bf16(Table& t) {
#if defined(__AVX512BF16__)
  t.attention_gemm_bf16 = cpu::avx512_bf16::gemm_bf16;
#else
  (void)t;
#endif
}
}  // namespace tg::cpu::isa::avx512
#endif
