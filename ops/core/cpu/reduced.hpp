// ops/core/cpu/reduced.hpp — how a CPU kernel runs on bfloat16 and float16: it loads a chunk of
// each operand as float32 through the one conversion path (autograd/convert.hpp), runs its float32
// body on the chunk, and stores the result rounded once. Memory holds the reduced type; every
// formula stays written once, in float32. Row kernels (softmax, norms, cross-entropy) load a row
// into a buffer the same way (load / store, load_row / store_row for strided rows). Internal to the
// CPU kernels (ops/<family>/cpu/).
#pragma once

#include "autograd/convert.hpp"
#include "ops/core/cpu/xt.hpp"
#include "ops/kern/kernel_codes.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace tg::cpu::reduced {

inline bool is(kern::DT dt) { return dt == kern::DT::BF16 || dt == kern::DT::F16; }
inline DType dtype(kern::DT dt) { return static_cast<DType>(dt); }

// Elements [i, i + n) of a reduced-type operand as float32 into dst (nothing for a null operand),
// and n float32 values stored rounded into dst[i, i + n).
inline void load(kern::DT dt, float* dst, const void* src, int64_t i, int64_t n) {
  if (src) convert::to_float(dtype(dt), dst, static_cast<const uint16_t*>(src) + i, n);
}
inline void store(kern::DT dt, void* dst, int64_t i, const float* src, int64_t n) {
  convert::from_float(dtype(dt), static_cast<uint16_t*>(dst) + i, src, n);
}

// Row kernels' strided forms: the n elements src[i + k·stride] (k < n) as float32 into dst, and n
// float32 values stored rounded into dst[i + k·stride]; stride 1 is load / store. A strided row
// (softmax over a non-last dim, cross-entropy's (N, C, d1) logits) is gathered in 16-bit chunks
// and converted in one call per chunk, so the conversion path stays the one above.
inline void load_row(kern::DT dt, float* dst, const void* src, int64_t i, int64_t n,
                     int64_t stride) {
  if (stride == 1) return load(dt, dst, src, i, n);
  const uint16_t* s = static_cast<const uint16_t*>(src) + i;
  uint16_t tmp[convert::kChunk];
  for (int64_t k = 0; k < n; k += convert::kChunk) {
    const int64_t m = std::min(convert::kChunk, n - k);
    for (int64_t j = 0; j < m; ++j) tmp[j] = s[(k + j) * stride];
    convert::to_float(dtype(dt), dst + k, tmp, m);
  }
}
inline void store_row(kern::DT dt, void* dst, int64_t i, const float* src, int64_t n,
                      int64_t stride) {
  if (stride == 1) return store(dt, dst, i, src, n);
  uint16_t* d = static_cast<uint16_t*>(dst) + i;
  uint16_t tmp[convert::kChunk];
  for (int64_t k = 0; k < n; k += convert::kChunk) {
    const int64_t m = std::min(convert::kChunk, n - k);
    convert::from_float(dtype(dt), tmp, src + k, m);
    for (int64_t j = 0; j < m; ++j) d[(k + j) * stride] = tmp[j];
  }
}

// An elementwise kernel on n elements of reduced type: `out` (stored) and the operands `in`
// (loaded; null ones stay null), body(float* out, const float* in[N], int64_t m) on each chunk of
// m <= convert::kChunk elements, in parallel across chunks like chunks().
template <size_t N, typename Body>
void elementwise(kern::DT dt, int64_t n, void* out, const std::array<const void*, N>& in,
                 Body&& body) {
  xtd::chunks(
      n,
      [&](int64_t lo, int64_t hi) {
        float ob[convert::kChunk];
        float ib[N][convert::kChunk];
        std::array<const float*, N> ip{};
        for (int64_t i = lo; i < hi; i += convert::kChunk) {
          const int64_t m = std::min(convert::kChunk, hi - i);
          for (size_t k = 0; k < N; ++k) {
            load(dt, ib[k], in[k], i, m);
            ip[k] = in[k] ? ib[k] : nullptr;
          }
          body(ob, ip.data(), m);
          store(dt, out, i, ob, m);
        }
      },
      2);
}

// Whole operands, for kernels whose walk is not one flat run (broadcasts, strides, reductions,
// scans, sorts, index accumulations): a float32 copy of n elements (empty for a null operand),
// which the float32 kernel reads, and its n float32 results stored rounded once.
inline std::vector<float> widen(kern::DT dt, const void* src, int64_t n) {
  std::vector<float> v(src ? static_cast<size_t>(n) : 0);
  if (src) convert::to_float(dtype(dt), v.data(), src, n);
  return v;
}
inline void narrow(kern::DT dt, void* dst, const std::vector<float>& v) {
  convert::from_float(dtype(dt), dst, v.data(), static_cast<int64_t>(v.size()));
}

}  // namespace tg::cpu::reduced
