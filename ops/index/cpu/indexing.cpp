// ops/index/cpu/indexing.cpp — CPU kernels of the indexing and sampling family
// (ops/index/gather.cpp): gather / scatter_add along one dim, row sorts (sort, argsort, topk),
// tril/triu masks and multinomial draws. These are index-driven loops (a data-dependent address per
// element, a sequential scan, a comparison sort), where an xtensor expression has nothing to
// vectorise, so they are plain loops; rows of the sorts split across threads (each row's result is
// independent of the thread), everything else stays serial and in a fixed order: scatter_add sums
// in the index's row-major order and multinomial draws in row-major order, so results repeat
// exactly. Deliberately not here: argument checks, index range checks, autograd
// (ops/index/gather.cpp).
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/detail.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <type_traits>
#include <vector>

namespace tg::cpu {

namespace {
// Calls f(e, a, b) for every element e of a contiguous tensor of shape `is`, with
// a = Σ_{d != dim} i_d·ast[d] (the dim's own term is left to f: it depends on index[e]) and
// b = Σ_d i_d·bst[d], i the multi-index of e. An odometer over the outer dims, a tight inner loop.
template <typename F>
void walk_index(const Shape& is, int64_t dim, const Shape& ast, const Shape& bst, F&& f) {
  const int64_t n = shape_numel(is);
  if (n == 0) return;
  const int64_t nd = static_cast<int64_t>(is.size()), last = nd - 1;
  auto sa = [&](int64_t d) { return d == dim ? 0 : ast[d]; };
  const int64_t inner = is[last], ia = sa(last), ib = bst[last];
  std::vector<int64_t> i(nd, 0);
  int64_t a = 0, b = 0;
  for (int64_t e = 0; e < n; e += inner) {
    for (int64_t j = 0; j < inner; ++j) f(e + j, a + j * ia, b + j * ib);
    for (int64_t d = last - 1; d >= 0; --d) {  // advance the odometer
      if (++i[d] < is[d]) {
        a += sa(d);
        b += bst[d];
        break;
      }
      a -= sa(d) * (is[d] - 1);
      b -= bst[d] * (is[d] - 1);
      i[d] = 0;
    }
  }
}

// The sort order: ascending (or descending) with NaN the largest value, ties by lower index.
// A total order on (value, index), so any sort algorithm gives what a stable sort gives.
template <typename T>
struct RowOrder {
  const T* v;  // the row, gathered contiguous
  bool descending;
  static bool nan(T x) {
    if constexpr (std::is_floating_point_v<T>)
      return std::isnan(x);
    else
      return false;
  }
  // a strictly before b by value alone
  bool before(T a, T b) const {
    const bool na = nan(a), nb = nan(b);
    if (na || nb) return descending ? na && !nb : nb && !na;
    return descending ? a > b : a < b;
  }
  bool operator()(int64_t i, int64_t j) const {
    if (before(v[i], v[j])) return true;
    if (before(v[j], v[i])) return false;
    return i < j;
  }
};
}  // namespace

template <typename T>
void gather(T* out, const Shape& out_strides, const T* x, const Shape& x_strides,
            const int64_t* index, const Shape& index_shape, int64_t dim) {
  const int64_t sd = x_strides[dim];
  walk_index(index_shape, dim, x_strides, out_strides,
             [&](int64_t e, int64_t a, int64_t b) { out[b] = x[a + index[e] * sd]; });
}

template <typename T>
void scatter_add(T* out, const Shape& out_strides, const T* src, const Shape& src_strides,
                 const int64_t* index, const Shape& index_shape, int64_t dim) {
  const int64_t sd = out_strides[dim];
  walk_index(index_shape, dim, out_strides, src_strides,
             [&](int64_t e, int64_t a, int64_t b) { out[a + index[e] * sd] += src[b]; });
}

template <typename T>
void scatter_reduce_lines(T* out, const Shape& out_strides, const T* src, const Shape& src_strides,
                          const int64_t* index, const Shape& index_shape, int64_t dim, ScatterOp r,
                          bool include_self, int64_t out_numel) {
  const int64_t sd = out_strides[dim];
  using R = ScatterOp;
  const double inf = std::numeric_limits<double>::infinity();
  if (!include_self && r != R::None)  // the targets start from the reduction's identity
    walk_index(index_shape, dim, out_strides, src_strides, [&](int64_t e, int64_t a, int64_t) {
      T& o = out[a + index[e] * sd];
      o = r == R::Prod ? T(1) : r == R::Amax ? T(-inf) : r == R::Amin ? T(inf) : T(0);
    });
  std::vector<int64_t> count(r == R::Mean ? static_cast<size_t>(out_numel) : 0,
                             include_self ? 1 : 0);
  walk_index(index_shape, dim, out_strides, src_strides, [&](int64_t e, int64_t a, int64_t b) {
    const int64_t t = a + index[e] * sd;
    T& o = out[t];
    const T v = src[b];
    switch (r) {
      case R::None:
        o = v;
        break;
      case R::Sum:
        o += v;
        break;
      case R::Mean:
        o += v, ++count[static_cast<size_t>(t)];
        break;
      case R::Prod:
        o *= v;
        break;
      case R::Amax:
        o = std::isnan(o) || std::isnan(v) ? T(NAN) : std::max(o, v);
        break;
      case R::Amin:
        o = std::isnan(o) || std::isnan(v) ? T(NAN) : std::min(o, v);
        break;
    }
  });
  if (r == R::Mean)
    for (int64_t t = 0; t < out_numel; ++t)
      if (count[static_cast<size_t>(t)] > 1)
        out[t] /= static_cast<T>(count[static_cast<size_t>(t)]);
}

void scatter_reduce(ScatterOp op, DT dt, void* out, const void* src, const int64_t* index,
                    const Strided& st, int dim, bool include_self, int64_t* count,
                    int64_t out_numel) {
  (void)count;  // the CPU counts in its own scratch
  const Shape is(st.shape, st.shape + st.ndim), os(st.stride[0], st.stride[0] + st.ndim),
      ss(st.stride[1], st.stride[1] + st.ndim);
  detail::dispatch_float(static_cast<DType>(dt), "scatter_reduce", [&](auto tag) {
    using T = decltype(tag);
    scatter_reduce_lines<T>(static_cast<T*>(out), os, static_cast<const T*>(src), ss, index, is,
                            dim, op, include_self, out_numel);
  });
}

template <typename T>
void sort_rows(T* values, int64_t* indices, const T* x, int64_t outer, int64_t n, int64_t inner,
               int64_t k, bool descending, bool sorted) {
  if (k == 0) return;
  detail::parallel_for(outer * inner, outer * n * inner, [&](int64_t r) {
    const int64_t o = r / inner, i = r % inner;
    std::unique_ptr<T[]> row(new T[n]);  // not std::vector: vector<bool> has no data()
    std::vector<int64_t> ord(n);
    for (int64_t j = 0; j < n; ++j) row[j] = x[(o * n + j) * inner + i];
    std::iota(ord.begin(), ord.end(), int64_t(0));
    const RowOrder<T> cmp{row.get(), descending};
    if (k == n) {
      std::sort(ord.begin(), ord.end(), cmp);
    } else {
      std::nth_element(ord.begin(), ord.begin() + (k - 1), ord.end(), cmp);
      std::sort(ord.begin(), ord.begin() + k, cmp);
    }
    if (!sorted) std::sort(ord.begin(), ord.begin() + k);  // the chosen k in index order
    for (int64_t j = 0; j < k; ++j) {
      values[(o * k + j) * inner + i] = row[ord[j]];
      indices[(o * k + j) * inner + i] = ord[j];
    }
  });
}

template <typename T>
void triangle(T* out, const T* x, int64_t B, int64_t N, int64_t C, int64_t diagonal, bool lower) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t r = 0; r < N; ++r) {
      const int64_t at = (b * N + r) * C;
      for (int64_t c = 0; c < C; ++c) {
        const bool keep = lower ? c - r <= diagonal : c - r >= diagonal;
        out[at + c] = keep ? x[at + c] : T(0);
      }
    }
}

template <typename T>
void multinomial(int64_t* out, const T* probs, int64_t N, int64_t C, int64_t k, bool replacement,
                 Generator& gen) {
  std::vector<double> cdf(C), key(C);
  std::vector<int64_t> ord(C);
  for (int64_t r = 0; r < N; ++r) {
    const T* p = probs + r * C;
    int64_t* o = out + r * k;
    if (replacement) {
      // Inverse CDF: category c is drawn when cdf[c-1] <= u·total < cdf[c] (never a zero entry).
      double s = 0;
      int64_t last = 0;  // the last positive category (u·total rounding up to total lands here)
      for (int64_t c = 0; c < C; ++c) {
        s += static_cast<double>(p[c]);
        cdf[c] = s;
        if (p[c] > 0) last = c;
      }
      for (int64_t j = 0; j < k; ++j) {
        const double u = gen.uniform() * s;
        const int64_t c = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
        o[j] = std::min(c, last);
      }
      continue;
    }
    // Without replacement: the exponential race. Category c gets key E_c / p_c with E_c ~ Exp(1)
    // (one uniform per category, zero entries included, so the stream does not depend on p);
    // the k smallest keys in increasing order are distributed as k sequential draws, each from
    // the categories not drawn yet, renormalised.
    int64_t m = 0;
    for (int64_t c = 0; c < C; ++c) {
      const double e = -std::log1p(-gen.uniform());
      if (p[c] > 0) {
        key[c] = e / static_cast<double>(p[c]);
        ord[m++] = c;
      }
    }
    auto by_key = [&](int64_t a, int64_t b) {
      return key[a] < key[b] || (key[a] == key[b] && a < b);
    };
    std::partial_sort(ord.begin(), ord.begin() + k, ord.begin() + m, by_key);
    std::copy(ord.begin(), ord.begin() + k, o);
  }
}

// ---- instantiations ----
#define TG_GATHER(T)                                                                              \
  template void gather<T>(T*, const Shape&, const T*, const Shape&, const int64_t*, const Shape&, \
                          int64_t);                                                               \
  template void sort_rows<T>(T*, int64_t*, const T*, int64_t, int64_t, int64_t, int64_t, bool,    \
                             bool);                                                               \
  template void triangle<T>(T*, const T*, int64_t, int64_t, int64_t, int64_t, bool);
TG_GATHER(float)
TG_GATHER(double)
TG_GATHER(int64_t)
TG_GATHER(bool)
#undef TG_GATHER
// bfloat16 / float16: gathers and triangles move bits (sorts and sums run on float32 copies).
template void gather<uint16_t>(uint16_t*, const Shape&, const uint16_t*, const Shape&,
                               const int64_t*, const Shape&, int64_t);
template void triangle<uint16_t>(uint16_t*, const uint16_t*, int64_t, int64_t, int64_t, int64_t,
                                 bool);
template void scatter_reduce_lines<float>(float*, const Shape&, const float*, const Shape&,
                                          const int64_t*, const Shape&, int64_t, ScatterOp, bool,
                                          int64_t);
template void scatter_reduce_lines<double>(double*, const Shape&, const double*, const Shape&,
                                           const int64_t*, const Shape&, int64_t, ScatterOp, bool,
                                           int64_t);
template void scatter_add<float>(float*, const Shape&, const float*, const Shape&, const int64_t*,
                                 const Shape&, int64_t);
template void scatter_add<double>(double*, const Shape&, const double*, const Shape&,
                                  const int64_t*, const Shape&, int64_t);
template void scatter_add<int64_t>(int64_t*, const Shape&, const int64_t*, const Shape&,
                                   const int64_t*, const Shape&, int64_t);
template void multinomial<float>(int64_t*, const float*, int64_t, int64_t, int64_t, bool,
                                 Generator&);
template void multinomial<double>(int64_t*, const double*, int64_t, int64_t, int64_t, bool,
                                  Generator&);

}  // namespace tg::cpu
