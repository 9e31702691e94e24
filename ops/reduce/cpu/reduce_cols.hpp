// ops/reduce/cpu/reduce_cols.hpp — the column sums behind the reductions over a leading dim
// (acc[i] += x[j·stride + i] for every row j, as ops/reduce/cpu/reduce.cpp's sum, mean and var take
// them), written once on xsimd batches of architecture A. Included by ops/reduce/cpu/reduce.cpp (the
// build's own architecture) and ops/reduce/cpu/reduce_avx512.cpp (AVX-512 flags; in the table only
// where the CPU has AVX-512). Each acc[i] gets its rows added one at a time in row order, in
// double, whatever the batch width, so both variants give the same bits. Internal linkage and no
// inline std:: algorithm, for the reason ops/softmax/cpu/softmax_rows.hpp gives. Internal to the CPU kernels (ops/<family>/cpu/).
#pragma once

#include <xsimd/xsimd.hpp>

#include <cstdint>
#include <type_traits>

namespace tg::cpu {
namespace {
namespace cols {

// x[0 .. L) as doubles.
template <typename A, typename T>
xsimd::batch<double, A> load_d(const T* p) {
  if constexpr (std::is_same_v<T, double>)
    return xsimd::batch<double, A>::load_unaligned(p);
  else
    return xsimd::load_as<double, A>(p, xsimd::unaligned_mode());
}

// acc[i] += Σ_j x[j·stride + i] for i < m, rows j < r added in order. Rows go in blocks of
// kRowBlock (a block of m ≤ 256 columns stays in L1/L2 while every chunk of columns reads it);
// within a block, columns go in chunks of four batches whose accumulators stay in registers down
// the block's rows, then single batches, then single columns.
constexpr int64_t kRowBlock = 32;

template <typename A, typename T>
void add_rows(double* acc, const T* x, int64_t r, int64_t stride, int64_t m) {
  using D = xsimd::batch<double, A>;
  constexpr int64_t L = static_cast<int64_t>(D::size);
  for (int64_t j0 = 0; j0 < r; j0 += kRowBlock) {
    const int64_t rb = r - j0 < kRowBlock ? r - j0 : kRowBlock;
    const T* xb = x + j0 * stride;
    int64_t i = 0;
    for (; i + 4 * L <= m; i += 4 * L) {
      D a0 = D::load_unaligned(acc + i), a1 = D::load_unaligned(acc + i + L),
        a2 = D::load_unaligned(acc + i + 2 * L), a3 = D::load_unaligned(acc + i + 3 * L);
      const T* p = xb + i;
      for (int64_t j = 0; j < rb; ++j, p += stride) {
        a0 += load_d<A>(p);
        a1 += load_d<A>(p + L);
        a2 += load_d<A>(p + 2 * L);
        a3 += load_d<A>(p + 3 * L);
      }
      a0.store_unaligned(acc + i);
      a1.store_unaligned(acc + i + L);
      a2.store_unaligned(acc + i + 2 * L);
      a3.store_unaligned(acc + i + 3 * L);
    }
    for (; i + L <= m; i += L) {
      D a = D::load_unaligned(acc + i);
      const T* p = xb + i;
      for (int64_t j = 0; j < rb; ++j, p += stride) a += load_d<A>(p);
      a.store_unaligned(acc + i);
    }
    for (; i < m; ++i) {
      double a = acc[i];
      for (int64_t j = 0; j < rb; ++j) a += static_cast<double>(xb[j * stride + i]);
      acc[i] = a;
    }
  }
}

}  // namespace cols
}  // namespace
}  // namespace tg::cpu
