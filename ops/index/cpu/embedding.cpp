// ops/index/cpu/embedding.cpp — CPU kernels of the embedding lookup (cpu::embedding_forward: a row
// gather) and its backward (cpu::embedding_backward: an index_add of dout rows into dweight), one
// xtensor assignment per row over 1-D adaptors. The gather splits rows across threads; the
// index_add splits the C columns into slices (every slice walks the rows in order), so each
// dweight element sums its rows in index order at any thread count.
// Deliberately not here: the op, index checks, padding_idx resolution (ops/index/embedding.cpp).
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cpu/xt.hpp"

#include <algorithm>

namespace tg::cpu {
using xtd::vec;

namespace {
constexpr int64_t kSlice = 256;  // dweight columns per backward task
}

template <typename T>
void embedding_forward(T* out, const T* weight, const int64_t* idx, int64_t n, int64_t C) {
  if (C == 0) return;
  detail::parallel_for(
      n, n * C, [&](int64_t k) { xt::noalias(vec(out + k * C, C)) = vec(weight + idx[k] * C, C); });
}

template <typename T>
void embedding_backward(T* dweight, const T* dout, const int64_t* idx, int64_t n, int64_t C,
                        int64_t pad) {
  const int64_t slices = (C + kSlice - 1) / kSlice;
  detail::parallel_for(slices, n * C, [&](int64_t s) {
    const int64_t lo = s * kSlice, m = std::min(C, lo + kSlice) - lo;
    for (int64_t k = 0; k < n; ++k) {
      if (idx[k] == pad) continue;
      auto D = vec(dweight + idx[k] * C + lo, m);
      xt::noalias(D) += vec(dout + k * C + lo, m);
    }
  });
}

// bfloat16 / float16: the lookup moves bits.
template void embedding_forward<uint16_t>(uint16_t*, const uint16_t*, const int64_t*, int64_t,
                                          int64_t);
template void embedding_forward<float>(float*, const float*, const int64_t*, int64_t, int64_t);
template void embedding_forward<double>(double*, const double*, const int64_t*, int64_t, int64_t);
template void embedding_backward<float>(float*, const float*, const int64_t*, int64_t, int64_t,
                                        int64_t);
template void embedding_backward<double>(double*, const double*, const int64_t*, int64_t, int64_t,
                                         int64_t);

}  // namespace tg::cpu
