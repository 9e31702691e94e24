// tools/cuda_emu/cuda_bf16.h — the emulator's <cuda_bf16.h>: __nv_bfloat16 (two bytes, the bits
// of a bfloat16) and the conversions cuda/ uses, __float2bfloat16_rn and __bfloat162float, with
// tg_emu::Half's round-to-nearest-even. Deliberately not here: bfloat16 arithmetic, the paired
// __nv_bfloat162 type and the other rounding modes (cuda/ computes in float).
#pragma once

#include "tg_emu/half.h"

struct __nv_bfloat16 {
  uint16_t __x;
};
static_assert(sizeof(__nv_bfloat16) == 2, "__nv_bfloat16 holds two bytes");

inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  return __nv_bfloat16{tg_emu::Half<true>(f).bits};
}
inline float __bfloat162float(__nv_bfloat16 h) {
  tg_emu::Half<true> v;
  v.bits = h.__x;
  return float(v);
}
