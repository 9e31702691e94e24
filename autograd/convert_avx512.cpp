// autograd/convert_avx512.cpp — the conversion path's AVX-512 bodies (autograd/convert.hpp):
// AVX512-BF16's vcvtneps2bf16 rounds 16 floats to bfloat16 at once, but flushes subnormal inputs
// to zero, so lanes holding a float32 subnormal are redone in integer arithmetic (exact, like
// autograd/half.hpp); float16 through vcvtps2ph / vcvtph2ps. Masked loads and stores handle every
// tail. Compiled with AVX-512 F/BW/VL + BF16 flags; run only where the CPU has them.
#include "autograd/convert_detail.hpp"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512BF16__)
#include <immintrin.h>

#include <cstring>

namespace tg::convert::detail {
namespace {
inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1);
}
void bf16_from_f32(uint16_t* o, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __m256bh r = _mm512_cvtneps_pbh(v);
    __m256i bits;
    std::memcpy(&bits, &r, sizeof bits);
    const __m512i u = _mm512_castps_si512(v);
    const __m512i abs = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    // |x| in [1, 0x7fffff] as bits: a float32 subnormal, which the instruction flushes.
    const __mmask16 sub = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(abs, _mm512_set1_epi32(1)),
                                                  _mm512_set1_epi32(0x7fffff));
    if (sub) {
      const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
      const __m512i exact = _mm512_srli_epi32(
          _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
      bits = _mm256_mask_mov_epi16(bits, sub, _mm512_cvtepi32_epi16(exact));
    }
    _mm256_mask_storeu_epi16(o + i, m, bits);
  }
}
void f32_from_bf16(float* o, const uint16_t* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, x + i));
    _mm512_mask_storeu_ps(o + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
  }
}
void f16_from_f32(uint16_t* o, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_mask_storeu_epi16(o + i, m, h);
  }
}
void f32_from_f16(float* o, const uint16_t* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(o + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
  }
}
}  // namespace

bool fill_avx512_bf16(Bodies& b) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512bf16"))
    return false;
  b = Bodies{bf16_from_f32, f32_from_bf16, f16_from_f32, f32_from_f16};
  return true;
}
}  // namespace tg::convert::detail

#else
namespace tg::convert::detail {
bool fill_avx512_bf16(Bodies&) { return false; }
}  // namespace tg::convert::detail
#endif
