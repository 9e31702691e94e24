// ops/rotary/cpu/rotary.cpp — the CPU kernel of rotary position embeddings (cpu::rotary;
// ops/rotary/rotary.cpp is the op): each row of x (outer, T, inner, D) at position t has its first
// R dims rotated in pairs by the angles of cos, sin (T, R/2) — (i, i + R/2) half-split, (2i, 2i+1)
// interleaved — and the dims past R copied; inverse rotates by −θ (the backward). In T's precision,
// as PyTorch's composed form computes it; rows split across threads (the same bits at any thread
// count). bfloat16 / float16 x: float32 tables, each row turned in float32 and rounded once
// (rotary_reduced). Deliberately not here: the tables (nn::RotaryEmbedding), gradients of cos and
// sin.
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cpu/reduced.hpp"
#include "ops/core/detail.hpp"

#include <vector>

namespace tg::cpu {
namespace {
// One row: o = x with its first R dims turned by the angles of c, s (R/2 each).
template <typename T>
void rotate_row(T* __restrict o, const T* __restrict xr, const T* c, const T* s, int64_t D,
                int64_t R, bool interleaved, bool inverse) {
  const int64_t h = R / 2;
  if (interleaved) {
    for (int64_t i = 0; i < h; ++i) {
      const T si = inverse ? -s[i] : s[i], a = xr[2 * i], b = xr[2 * i + 1];
      o[2 * i] = a * c[i] - b * si;
      o[2 * i + 1] = b * c[i] + a * si;
    }
  } else if (inverse) {  // two loops over contiguous halves: the compiler vectorises them
    for (int64_t i = 0; i < h; ++i) o[i] = xr[i] * c[i] + xr[i + h] * s[i];
    for (int64_t i = 0; i < h; ++i) o[i + h] = xr[i + h] * c[i] - xr[i] * s[i];
  } else {
    for (int64_t i = 0; i < h; ++i) o[i] = xr[i] * c[i] - xr[i + h] * s[i];
    for (int64_t i = 0; i < h; ++i) o[i + h] = xr[i + h] * c[i] + xr[i] * s[i];
  }
  for (int64_t j = R; j < D; ++j) o[j] = xr[j];
}

template <typename T>
void rotary_rows(T* out, const T* x, const T* cs, const T* sn, int64_t outer, int64_t Tn,
                 int64_t inner, int64_t D, int64_t R, bool interleaved, bool inverse) {
  const int64_t h = R / 2, rows = outer * Tn * inner;
  detail::parallel_for(rows, rows * D, [&](int64_t r) {
    const int64_t t = (r / inner) % Tn;
    rotate_row(out + r * D, x + r * D, cs + t * h, sn + t * h, D, R, interleaved, inverse);
  });
}

// bfloat16 / float16 x and out (dt) with float32 tables (the op converts reduced ones): each row
// loaded as float32 (ops/core/cpu/reduced.hpp), turned in float32, stored rounded once.
void rotary_reduced(DT dt, void* out, const void* x, const float* cs, const float* sn,
                    int64_t outer, int64_t Tn, int64_t inner, int64_t D, int64_t R,
                    bool interleaved, bool inverse) {
  const int64_t h = R / 2, rows = outer * Tn * inner;
  detail::parallel_for(rows, rows * D, [&](int64_t r) {
    const int64_t t = (r / inner) % Tn;
    thread_local std::vector<float> buf;
    buf.resize(static_cast<size_t>(2 * D));
    reduced::load(dt, buf.data(), x, r * D, D);
    rotate_row(buf.data() + D, buf.data(), cs + t * h, sn + t * h, D, R, interleaved, inverse);
    reduced::store(dt, out, r * D, buf.data() + D, D);
  });
}
}  // namespace

void rotary(DT dt, void* out, const void* x, const void* cos, const void* sin, int64_t outer,
            int64_t T, int64_t inner, int64_t D, int64_t R, bool interleaved, bool inverse) {
  if (reduced::is(dt))
    return rotary_reduced(dt, out, x, static_cast<const float*>(cos),
                          static_cast<const float*>(sin), outer, T, inner, D, R, interleaved,
                          inverse);
  detail::dispatch_float(static_cast<DType>(dt), "rotary", [&](auto tag) {
    using V = decltype(tag);
    rotary_rows<V>(static_cast<V*>(out), static_cast<const V*>(x), static_cast<const V*>(cos),
                   static_cast<const V*>(sin), outer, T, inner, D, R, interleaved, inverse);
  });
}

}  // namespace tg::cpu
