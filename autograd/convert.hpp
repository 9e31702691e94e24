// autograd/convert.hpp — the one conversion path between dtypes on the CPU: Tensor::to, the
// creation ops, the I/O and every kernel that loads a reduced type (bfloat16, float16) as
// float32 and stores its result rounded once. Three paths give the same bits as autograd/half.hpp:
//   avx512_bf16  AVX-512 F/BW/VL + AVX512-BF16: vcvtneps2bf16 (with the subnormal lanes, which it
//                flushes to zero, redone exactly) and vcvtps2ph / vcvtph2ps;
//   avx2         AVX2 + F16C: bfloat16 rounding in integer lanes, F16C for float16;
//   scalar       autograd/half.hpp one element at a time.
// The best the CPU runs is chosen at start-up; TG_CONVERT=scalar|avx2|avx512_bf16 in the
// environment, or set_path, forces one (tests run every path on any machine that has it).
// Internal to the library (autograd/ and ops/); deliberately no tensors here.
#pragma once

#include "autograd/tensor.hpp"

#include <cstdint>

namespace tg::convert {

// n elements of dtype `from` at `in` written as dtype `to` at `out` (PyTorch's casts: floating to
// int64 truncates toward zero, to bool tests != 0; float64 to a reduced type rounds through
// float32, like c10::BFloat16(float(x))).
void elements(DType from, DType to, void* out, const void* in, int64_t n);
// float32 views for the kernels: `from` / `to` is float32, bfloat16 or float16.
void to_float(DType from, float* out, const void* in, int64_t n);
void from_float(DType to, void* out, const float* in, int64_t n);

enum class Path { Scalar, Avx2, Avx512Bf16 };
const char* path_name(Path p);  // "scalar", "avx2", "avx512_bf16"
Path path();                    // in use
bool path_supported(Path p);    // compiled in and run by this CPU
// Forces p if supported (returns false and changes nothing if not); reset_path: the best again.
bool set_path(Path p);
void reset_path();

// A kernel's chunk of float32 for reduced-type rows: up to kChunk elements at a time.
constexpr int64_t kChunk = 1024;

}  // namespace tg::convert
