// autograd/half.hpp — bfloat16 and float16 as C++ types, and their one scalar conversion to and
// from float: round to nearest, ties to even (PyTorch's .to(torch.bfloat16) and .half()); a NaN
// stays a NaN (quiet), ±inf, ±0 and subnormals convert exactly where representable. The kernels'
// vector conversions (ops/core/cpu/convert.cpp) give the same bits; this is their spec.
#pragma once

#include <cstdint>
#include <cstring>

namespace tg {

namespace half_bits {
inline uint32_t f2u(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float u2f(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace half_bits

// bfloat16: float32's top 16 bits (8 exponent bits, 7 mantissa bits).
inline float bf16_to_float(uint16_t b) { return half_bits::u2f(uint32_t(b) << 16); }
inline uint16_t float_to_bf16(float f) {
  uint32_t u = half_bits::f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);  // quiet NaN
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// float16 (IEEE binary16: 5 exponent bits, 10 mantissa bits, subnormals down to 2^-24).
inline float f16_to_float(uint16_t h) {
  uint32_t o = uint32_t(h & 0x7fffu) << 13;  // exponent and mantissa in place
  const uint32_t exp = o & (0x7c00u << 13);
  o += (127u - 15u) << 23;  // rebias the exponent
  if (exp == (0x7c00u << 13)) {
    o += (128u - 16u) << 23;            // inf or NaN: exponent all ones
    if (o & 0x7fffffu) o |= 0x400000u;  // a NaN comes back quiet, as F16C's vcvtph2ps
  } else if (exp == 0) {                // zero or subnormal: renormalise exactly
    o += 1u << 23;
    o = half_bits::f2u(half_bits::u2f(o) - half_bits::u2f(113u << 23));
  }
  return half_bits::u2f(o | (uint32_t(h & 0x8000u) << 16));
}
inline uint16_t float_to_f16(float f) {
  uint32_t u = half_bits::f2u(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  uint16_t o;
  if (u >= 0x47800000u) {  // 65536 or more (or inf/NaN): inf, or a quiet NaN
    o = u > 0x7f800000u ? uint16_t(0x7e00u | ((u >> 13) & 0x3ffu)) : uint16_t(0x7c00u);
  } else if (u < 0x38800000u) {  // below 2^-14: a subnormal or zero; the FPU rounds to 2^-24 units
    o = uint16_t(half_bits::f2u(half_bits::u2f(u) + 0.5f) - 0x3f000000u);
  } else {  // normal: rebias, round to nearest even on the 13 dropped bits
    const uint32_t odd = (u >> 13) & 1u;
    u += 0xc8000fffu + odd;  // ((15 - 127) << 23) + 0xfff
    o = uint16_t(u >> 13);
  }
  return uint16_t(o | sign);
}

// The element types of kBFloat16 and kFloat16 tensors (Tensor::data<tg::bfloat16>()).
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f) : bits(float_to_bf16(f)) {}
  static bfloat16 from_bits(uint16_t b) {
    bfloat16 r;
    r.bits = b;
    return r;
  }
  explicit operator float() const { return bf16_to_float(bits); }
};
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  explicit float16(float f) : bits(float_to_f16(f)) {}
  static float16 from_bits(uint16_t b) {
    float16 r;
    r.bits = b;
    return r;
  }
  explicit operator float() const { return f16_to_float(bits); }
};

}  // namespace tg
