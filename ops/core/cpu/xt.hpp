// ops/core/cpu/xt.hpp — internal to the CPU kernel translation units (ops/<family>/cpu/*.cpp, never a header
// of the library): xtensor + xsimd views of tapegrad's own storage, and the row/chunk loops the
// kernels parallelise with. Every view is an adaptor over a raw pointer (no copy, no allocation);
// kernels assign with xt::noalias (without it xtensor evaluates into a temporary first).
// Idioms measured on these machines (shared notes, XTENSOR.md): 1-D adaptors per row rather than
// 2-D expressions with an (N, 1) operand (those fall back to scalar code); immediate reducers;
// no transposed-view assignment; xt::blas::gemm with transpose flags, never xt::linalg::dot.
#pragma once

#ifndef XTENSOR_USE_XSIMD
#error "ops/<family>/cpu kernels are compiled with XTENSOR_USE_XSIMD (see ops/CMakeLists.txt)"
#endif

#include "ops/core/detail.hpp"

#include <xtensor/xadapt.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xoperation.hpp>
#include <xtensor/xtensor.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

namespace tg::cpu::xtd {

// n elements at p as a 1-D xtensor (static rank 1: the fast, fully vectorised path).
template <typename T>
auto vec(T* p, int64_t n) {
  return xt::adapt(p, static_cast<size_t>(n), xt::no_ownership(),
                   std::array<size_t, 1>{static_cast<size_t>(n)});
}

// A row-major (rows, cols) matrix at p whose rows are ld elements apart (ld >= cols), for
// xt::blas::gemm only: a rank-2 adaptor with STATIC row-major layout whose leading stride is ld.
// Why this form (checked with a counting allocator: 0 allocations, BLAS reads p itself):
// xt::blas::gemm passes A and B through view_eval<row_major>, which returns a static row-major
// container as it is but copies anything else into a contiguous temporary (2 allocations per call
// with xt::adapt(p, size, no_ownership, shape, strides), whose layout is dynamic); and xtensor
// refuses custom strides on a static layout (resize(shape, strides) throws "Cannot resize with
// custom strides when layout() is != layout_type::dynamic"). So the adaptor is built contiguous
// (rows, cols) and its leading stride then set to ld. Its static layout claims contiguity, so
// never assign an xtensor expression to it when ld > cols (the linear assigner would fill the
// gaps between rows): it exists to hand BLAS a pointer, a shape and a leading dimension.
template <typename T>
class mat : public xt::xtensor_adaptor<
                xt::xbuffer_adaptor<T*, xt::no_ownership, std::allocator<std::remove_const_t<T>>>,
                2, xt::layout_type::row_major> {
  using buffer = xt::xbuffer_adaptor<T*, xt::no_ownership, std::allocator<std::remove_const_t<T>>>;
  using base = xt::xtensor_adaptor<buffer, 2, xt::layout_type::row_major>;

 public:
  mat(T* p, int64_t rows, int64_t cols, int64_t ld)
      : base(buffer(p, static_cast<size_t>(rows * cols)),
             std::array<size_t, 2>{static_cast<size_t>(rows), static_cast<size_t>(cols)}) {
    this->strides_impl()[0] = static_cast<std::ptrdiff_t>(ld);
    this->backstrides_impl()[0] = static_cast<std::ptrdiff_t>(rows > 0 ? (rows - 1) * ld : 0);
  }
};

// Calls f(lo, hi) over [0, n) split into one chunk per thread when n is large (elementwise work:
// each thread runs one xtensor expression on its slice), else once. Chunks start on multiples
// of 64 bytes: xtensor computes an unaligned head and the tail with scalar math (std::exp, not
// xsimd's), so aligned chunks give the same bits at every thread count.
template <typename F>
void chunks(int64_t n, F&& f, int64_t elem_bytes = 4) {
  const int nt = get_num_threads();
  if (n < detail::kParallelMin || nt <= 1) {
    if (n > 0) f(int64_t(0), n);
    return;
  }
  const int64_t align = 64 / elem_bytes;
  const int64_t step = ((n + nt - 1) / nt + align - 1) / align * align;
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int t = 0; t < nt; ++t) {
    const int64_t lo = std::min<int64_t>(n, t * step), hi = std::min<int64_t>(n, lo + step);
    if (lo < hi) f(lo, hi);
  }
}

// Operands laid over one index space `out` through element strides (0 where broadcast), with
// dims merged wherever every operand is laid out alike and size-1 dims dropped: what is left is
// `outer` rows of `inner` elements, each operand advancing through its own strides over the
// outer dims. The one N-d walk of the CPU kernels (broadcasting, where, strided copies).
struct Walk {
  Shape dims;                  // merged dims; the last one is the row
  std::vector<Shape> strides;  // per operand, per merged dim
  int64_t inner = 1, outer = 1;
  Walk() = default;  // empty: for callers that take a flat path instead
  Walk(const Shape& out, const std::vector<Shape>& st) {
    const size_t nd = out.size(), k = st.size();
    strides.resize(k);
    for (size_t d = nd; d-- > 0;) {  // from the innermost dim outwards
      if (out[d] == 1) continue;
      bool merge = !dims.empty();
      for (size_t i = 0; merge && i < k; ++i) merge = st[i][d] == strides[i].front() * dims.front();
      if (merge) {
        dims.front() *= out[d];
        continue;
      }
      dims.insert(dims.begin(), out[d]);
      for (size_t i = 0; i < k; ++i) strides[i].insert(strides[i].begin(), st[i][d]);
    }
    if (dims.empty()) {  // one element
      dims = {1};
      strides.assign(k, Shape{1});
    }
    inner = dims.back();
    for (size_t d = 0; d + 1 < dims.size(); ++d) outer *= dims[d];
  }
  int64_t inner_stride(size_t k) const { return strides[k].back(); }
};

// Calls row(r, off) for each row r of w with the operands' element offsets off[k]; rows in
// parallel when the work is large (a row's result never depends on the thread computing it).
template <size_t K, typename F>
void for_rows(const Walk& w, F&& row) {
  const size_t od = w.dims.size() - 1;
  auto offsets = [&](int64_t r) {
    std::array<int64_t, K> off{};
    for (size_t d = od; d-- > 0;) {
      const int64_t i = r % w.dims[d];
      r /= w.dims[d];
      for (size_t k = 0; k < K; ++k) off[k] += i * w.strides[k][d];
    }
    return off;
  };
  detail::parallel_for(w.outer, w.outer * w.inner, [&](int64_t r) { row(r, offsets(r)); });
}

}  // namespace tg::cpu::xtd
