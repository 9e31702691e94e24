// tools/cuda_emu/tg_emu/half.h — the emulator's bfloat16 and float16 storage: float32 rounded to
// nearest even (NaN stays a quiet NaN, overflow gives inf, float16 subnormals exact), read back
// exactly. Written here, not taken from tapegrad, so the emulator checks tapegrad's own conversion
// (autograd/convert.hpp) rather than repeating it. Used by cuda_bf16.h / cuda_fp16.h (the device
// types) and cublas_v2.h (GEMM results). Deliberately no arithmetic: kernels convert to float.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tg_emu {

template <bool BF>
struct Half {
  uint16_t bits;
  Half() = default;
  explicit Half(float f) : bits(BF ? to_bf16(f) : to_f16(f)) {}
  operator float() const { return BF ? from_bits(uint32_t(bits) << 16) : f16_value(bits); }

  static uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  }
  static float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static uint16_t to_bf16(float f) {
    const uint32_t x = bits_of(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // quiet NaN
    return uint16_t((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
  }
  static uint16_t to_f16(float f) {
    const uint32_t x = bits_of(f), ax = x & 0x7fffffffu;
    const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
    if (ax > 0x7f800000u) return sign | 0x7e00;   // NaN
    if (ax >= 0x477ff000u) return sign | 0x7c00;  // >= 65520 rounds to inf
    if (ax < 0x38800000u)                         // below 2^-14: a subnormal, units of 2^-24
      return sign | uint16_t(std::nearbyint(from_bits(ax) * 16777216.0f));
    const uint32_t r = ax + 0xfffu + ((ax >> 13) & 1) - (112u << 23);  // exponent 127 -> 15
    return sign | uint16_t(r >> 13);
  }
  static float f16_value(uint16_t h) {
    const uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v = e == 0    ? std::ldexp(float(m), -24)
              : e == 31 ? from_bits(0x7f800000u | (m << 13))
                        : from_bits(((e + 112) << 23) | (m << 13));
    return (h & 0x8000) ? -v : v;
  }
};

}  // namespace tg_emu
