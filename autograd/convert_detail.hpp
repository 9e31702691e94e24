// autograd/convert_detail.hpp — the conversion path's bodies, one set per instruction set
// (convert.cpp's scalar, convert_avx2.cpp, convert_avx512.cpp). Internal to those files.
#pragma once

#include <cstdint>

namespace tg::convert::detail {
struct Bodies {
  void (*bf16_from_f32)(uint16_t* out, const float* x, int64_t n);
  void (*f32_from_bf16)(float* out, const uint16_t* x, int64_t n);
  void (*f16_from_f32)(uint16_t* out, const float* x, int64_t n);
  void (*f32_from_f16)(float* out, const uint16_t* x, int64_t n);
};
// Each fills b with its bodies and returns true when the build compiled them and the CPU (and OS)
// runs them; false leaves b as it was.
bool fill_avx2(Bodies& b);
bool fill_avx512_bf16(Bodies& b);
}  // namespace tg::convert::detail
