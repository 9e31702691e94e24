// ops/random/cpu/dropout.cpp — the CPU kernel of inverted dropout (cpu::dropout_forward): the mask from
// the generator's 64-bit draws, in row-major order and in blocks (the same stream as one
// next_u64() per element, so a seed fixes the mask exactly as before), then out = x·keep as one
// xtensor expression per block. The draws dominate the cost; the mask test is a plain loop over
// uint64 draws (xtensor would mix uint64 and T in one expression, which it runs scalar anyway).
// Deliberately not here: the op and its record (ops/random/dropout.cpp; backward is mul(dout, keep)),
// the CUDA mask (Philox, cuda/dropout.cu).
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cpu/xt.hpp"

#include <algorithm>
#include <cmath>

namespace tg::cpu {
using xtd::vec;

template <typename T>
void dropout_forward(T* out, T* keep, const T* x, int64_t n, double p, Generator& gen) {
  if (p >= 1.0) {  // everything dropped, nothing drawn
    std::fill(keep, keep + n, T(0));
    std::fill(out, out + n, T(0));
    return;
  }
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  // Keep iff uniform() >= p, with uniform() = (u >> 11)·2⁻⁵³: the same test on the integer,
  // (u >> 11) >= ceil(p·2⁵³) (exact: p·2⁵³ only scales the exponent).
  const uint64_t threshold = static_cast<uint64_t>(std::ceil(std::ldexp(p, 53)));
  constexpr int64_t kBlock = 1024;
  uint64_t u[kBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t m = std::min(kBlock, n - i0);
    gen.next_u64s(u, m);
    T* pk = keep + i0;
    for (int64_t j = 0; j < m; ++j) pk[j] = (u[j] >> 11) >= threshold ? scale : T(0);
    xt::noalias(vec(out + i0, m)) = vec(x + i0, m) * vec(static_cast<const T*>(pk), m);
  }
}

template void dropout_forward<float>(float*, float*, const float*, int64_t, double, Generator&);
template void dropout_forward<double>(double*, double*, const double*, int64_t, double, Generator&);

}  // namespace tg::cpu
