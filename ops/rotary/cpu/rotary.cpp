// ops/rotary/cpu/rotary.cpp — the CPU kernel of rotary position embeddings (cpu::rotary; ops/rotary/rotary.cpp
// is the op): each row of x (outer, T, inner, D) at position t has its first R dims rotated in
// pairs by the angles of cos, sin (T, R/2) — (i, i + R/2) half-split, (2i, 2i+1) interleaved —
// and the dims past R copied; inverse rotates by −θ (the backward). In T's precision, as PyTorch's
// composed form computes it; rows split across threads (the same bits at any thread count).
// Deliberately not here: the tables (nn::RotaryEmbedding), gradients of cos and sin.
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/detail.hpp"

namespace tg::cpu {
namespace {
template <typename T>
void rotary_rows(T* out, const T* x, const T* cs, const T* sn, int64_t outer, int64_t Tn,
                 int64_t inner, int64_t D, int64_t R, bool interleaved, bool inverse) {
  const int64_t h = R / 2, rows = outer * Tn * inner;
  detail::parallel_for(rows, rows * D, [&](int64_t r) {
    const int64_t t = (r / inner) % Tn;
    const T* __restrict xr = x + r * D;
    T* __restrict o = out + r * D;
    const T* c = cs + t * h;
    const T* s = sn + t * h;
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
  });
}
}  // namespace

void rotary(DT dt, void* out, const void* x, const void* cos, const void* sin, int64_t outer,
            int64_t T, int64_t inner, int64_t D, int64_t R, bool interleaved, bool inverse) {
  detail::dispatch_float(static_cast<DType>(dt), "rotary", [&](auto tag) {
    using V = decltype(tag);
    rotary_rows<V>(static_cast<V*>(out), static_cast<const V*>(x), static_cast<const V*>(cos),
                   static_cast<const V*>(sin), outer, T, inner, D, R, interleaved, inverse);
  });
}

}  // namespace tg::cpu
