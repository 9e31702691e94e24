// autograd/convert_avx2.cpp — the conversion path's AVX2 + F16C bodies (autograd/convert.hpp):
// bfloat16 rounded to nearest even in integer lanes (NaN kept quiet), float16 through F16C's
// vcvtps2ph / vcvtph2ps. Compiled with -mavx2 -mf16c; run only where the CPU has both.
#include "autograd/convert_detail.hpp"
#include "autograd/half.hpp"

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>

namespace tg::convert::detail {
namespace {
// Eight floats' bfloat16 bits in the low half of eight 32-bit lanes.
inline __m256i bf16_lanes(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(rounded, quiet, nan);
}
void bf16_from_f32(uint16_t* o, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i lo = bf16_lanes(_mm256_loadu_ps(x + i));
    const __m256i hi = bf16_lanes(_mm256_loadu_ps(x + i + 8));
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), packed);
  }
  for (; i < n; ++i) o[i] = float_to_bf16(x[i]);
}
void f32_from_bf16(float* o, const uint16_t* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm256_storeu_ps(o + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
  }
  for (; i < n; ++i) o[i] = bf16_to_float(x[i]);
}
void f16_from_f32(uint16_t* o, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) o[i] = float_to_f16(x[i]);
}
void f32_from_f16(float* o, const uint16_t* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(o + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  for (; i < n; ++i) o[i] = f16_to_float(x[i]);
}
}  // namespace

bool fill_avx2(Bodies& b) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c")) return false;
  b = Bodies{bf16_from_f32, f32_from_bf16, f16_from_f32, f32_from_f16};
  return true;
}
}  // namespace tg::convert::detail

#else
namespace tg::convert::detail {
bool fill_avx2(Bodies&) { return false; }
}  // namespace tg::convert::detail
#endif
