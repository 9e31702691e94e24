// tools/cuda_emu/cuda_fp16.h — the emulator's <cuda_fp16.h>: __half (two bytes, the bits of an
// IEEE float16) and the conversions cuda/ uses, __float2half_rn and __half2float, with
// tg_emu::Half's round-to-nearest-even. Deliberately not here: half arithmetic, __half2 and the
// other rounding modes (cuda/ computes in float).
#pragma once

#include "tg_emu/half.h"

struct __half {
  uint16_t __x;
};
static_assert(sizeof(__half) == 2, "__half holds two bytes");

inline __half __float2half_rn(float f) { return __half{tg_emu::Half<false>(f).bits}; }
inline float __half2float(__half h) {
  tg_emu::Half<false> v;
  v.bits = h.__x;
  return float(v);
}
