// cuda/half.cuh — how a CUDA kernel runs on bfloat16 and float16 (DT::BF16, DT::F16): memory holds
// __nv_bfloat16 / __half; a kernel loads each element as float (widen, exact), computes in float
// (or in double where its float32 twin does) and rounds once on store (round_to, to nearest even:
// __float2bfloat16_rn / __float2half_rn on the device, tools/cuda_emu's own rounding on the host
// emulator). A double result goes through float32 first, as the CPU's casts do
// (autograd/convert.hpp: c10::BFloat16(float(x))). cuda/check.cuh's TG_DISPATCH_FLOATING and
// TG_DISPATCH_ALL give kernels these types. Deliberately not here: 16-bit arithmetic (every
// formula stays written once, in float or double) and the float32-scratch wrapper of the row
// kernels (reduced.cuh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace tg::cuda {

using bf16 = __nv_bfloat16;
using f16 = __half;

template <typename T>
constexpr bool kReduced = std::is_same_v<T, bf16> || std::is_same_v<T, f16>;

// The type a kernel computes an element of storage type T in: float for the reduced types.
template <typename T>
using compute_t = std::conditional_t<kReduced<T>, float, T>;

// An element as its compute type (exact).
template <typename T>
__host__ __device__ __forceinline__ compute_t<T> widen(T v) {
  if constexpr (std::is_same_v<T, bf16>)
    return __bfloat162float(v);
  else if constexpr (std::is_same_v<T, f16>)
    return __half2float(v);
  else
    return v;
}

// A computed value (float, double, int64, bool) stored as T, rounded once to a reduced type
// (from double through float32, like the CPU's casts); other T: static_cast.
template <typename T, typename V>
__host__ __device__ __forceinline__ T round_to(V v) {
  if constexpr (std::is_same_v<T, bf16>)
    return __float2bfloat16_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, f16>)
    return __float2half_rn(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

}  // namespace tg::cuda
