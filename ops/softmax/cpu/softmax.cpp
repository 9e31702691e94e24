// ops/softmax/cpu/softmax.cpp — the CPU's one row softmax / log_softmax, forward and backward, with
// the project's rule for fully masked and NaN rows (kernels.hpp states it). Used by softmax and
// log_softmax over any dim (ops/softmax/softmax.cpp; a non-last dim gathers columns into rows here)
// and by the fused CPU attention's score rows (ops/attention/cpu/fused.cpp). Written on xsimd
// batches, not xtensor expressions: xt::amax reduces scalar-wise and each per-row expression pays
// its setup again (docs/cpu-kernels.md, "The measured exceptions"). float32 math in float32
// (xsimd::exp), float64 in float64; sums accumulate in T lanes over at most kFlush batches, then in
// double. The row kernels themselves are in softmax_rows.hpp, built here for the build's
// architecture and in softmax_avx512.cpp for AVX-512; the table of ops/core/cpu/isa.hpp chooses
// between them. bfloat16 and float16 rows are loaded as float32 and run the float32 row kernels
// (reduced_rows), rounded once on the store. Deliberately not here: the op bodies, dims and the
// tape (ops/softmax/softmax.cpp), masking (attention).
#include "ops/core/cpu/isa.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cpu/reduced.hpp"
#include "ops/softmax/cpu/softmax_rows.hpp"
#include "ops/core/detail.hpp"

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace tg::cpu {

namespace {
// Columns gathered per block when softmax runs over a non-last dim.
constexpr int64_t kColumns = 16;

using Native = xsimd::default_arch;
}  // namespace

namespace isa::native {
void fill_softmax(Table& t) {
  t.softmax_row_f32 = rows::softmax_row<Native, float>;
  t.softmax_row_f64 = rows::softmax_row<Native, double>;
  t.softmax_backward_row_f32 = rows::softmax_backward_row<Native, float>;
  t.softmax_backward_row_f64 = rows::softmax_backward_row<Native, double>;
}
}  // namespace isa::native

template <typename T>
bool softmax_row(T* y, const T* x, int64_t n, bool is_log) {
  if constexpr (std::is_same_v<T, float>)
    return isa::table().softmax_row_f32(y, x, n, is_log);
  else
    return isa::table().softmax_row_f64(y, x, n, is_log);
}

template <typename T>
void softmax_backward_row(T* dx, const T* g, const T* y, int64_t n, bool is_log) {
  if constexpr (std::is_same_v<T, float>)
    isa::table().softmax_backward_row_f32(dx, g, y, n, is_log);
  else
    isa::table().softmax_backward_row_f64(dx, g, y, n, is_log);
}

namespace {
// Calls row(out_row, in_rows) on every softmax row of an (outer, n, inner) tensor with nin (1 or
// 2) inputs: on the rows themselves when they are contiguous (inner == 1; in parallel when
// large), else on blocks of up to kColumns columns gathered into contiguous scratch rows, the
// results scattered back into out.
template <typename T, typename Row>
void for_rows(T* out, std::array<const T*, 2> in, int nin, int64_t outer, int64_t n, int64_t inner,
              Row row) {
  if (inner == 1) {
    detail::parallel_for(outer, outer * n, [&](int64_t o) {
      row(out + o * n, std::array<const T*, 2>{in[0] + o * n, nin > 1 ? in[1] + o * n : nullptr});
    });
    return;
  }
  // scratch: kColumns output rows, then kColumns rows per input
  std::vector<T> scratch(static_cast<size_t>((nin + 1) * kColumns * n));
  auto srow = [&](int slot, int64_t c) { return scratch.data() + (slot * kColumns + c) * n; };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i0 = 0; i0 < inner; i0 += kColumns) {
      const int64_t w = std::min(kColumns, inner - i0), base = o * n * inner + i0;
      for (int a = 0; a < nin; ++a)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t c = 0; c < w; ++c) srow(a + 1, c)[j] = in[a][base + j * inner + c];
      for (int64_t c = 0; c < w; ++c)
        row(srow(0, c), std::array<const T*, 2>{srow(1, c), nin > 1 ? srow(2, c) : nullptr});
      for (int64_t j = 0; j < n; ++j)
        for (int64_t c = 0; c < w; ++c) out[base + j * inner + c] = srow(0, c)[j];
    }
}
}  // namespace

template <typename T>
void softmax_forward(T* y, const T* x, int64_t outer, int64_t n, int64_t inner, bool is_log) {
  for_rows<T>(y, {x, nullptr}, 1, outer, n, inner,
              [=](T* yr, std::array<const T*, 2> r) { softmax_row(yr, r[0], n, is_log); });
}

template <typename T>
void softmax_backward(T* dx, const T* g, const T* y, int64_t outer, int64_t n, int64_t inner,
                      bool is_log) {
  for_rows<T>(dx, {g, y}, 2, outer, n, inner, [=](T* dr, std::array<const T*, 2> r) {
    softmax_backward_row(dr, r[0], r[1], n, is_log);
  });
}

namespace {
// bfloat16 / float16: each row (at stride inner) loaded as float32 (ops/core/cpu/reduced.hpp), the
// float32 row kernel of the table (AVX-512 where the CPU has it), the result stored rounded once.
// Forward reads x (a); backward reads g (a) and the saved output y (b).
void reduced_rows(DT dt, void* out, const void* a, const void* b, int64_t outer, int64_t n,
                  int64_t inner, bool log) {
  const int64_t rows = outer * inner;
  detail::parallel_for(rows, rows * n, [&](int64_t q) {
    thread_local std::vector<float> buf;
    buf.resize(static_cast<size_t>(3 * n));
    float *o = buf.data(), *fa = o + n, *fb = fa + n;
    const int64_t start = (q / inner) * n * inner + q % inner;
    reduced::load_row(dt, fa, a, start, n, inner);
    if (b) {
      reduced::load_row(dt, fb, b, start, n, inner);
      softmax_backward_row<float>(o, fa, fb, n, log);
    } else {
      softmax_row<float>(o, fa, n, log);
    }
    reduced::store_row(dt, out, start, o, n, inner);
  });
}
}  // namespace

void softmax_forward(DT dt, void* y, const void* x, int64_t outer, int64_t r, int64_t inner,
                     bool log) {
  if (reduced::is(dt)) return reduced_rows(dt, y, x, nullptr, outer, r, inner, log);
  detail::dispatch_float(static_cast<DType>(dt), "softmax_forward", [&](auto tag) {
    using T = decltype(tag);
    softmax_forward<T>(static_cast<T*>(y), static_cast<const T*>(x), outer, r, inner, log);
  });
}
void softmax_backward(DT dt, void* dx, const void* g, const void* y, int64_t outer, int64_t r,
                      int64_t inner, bool log) {
  if (reduced::is(dt)) return reduced_rows(dt, dx, g, y, outer, r, inner, log);
  detail::dispatch_float(static_cast<DType>(dt), "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    softmax_backward<T>(static_cast<T*>(dx), static_cast<const T*>(g), static_cast<const T*>(y),
                        outer, r, inner, log);
  });
}

template bool softmax_row<float>(float*, const float*, int64_t, bool);
template bool softmax_row<double>(double*, const double*, int64_t, bool);
template void softmax_backward_row<float>(float*, const float*, const float*, int64_t, bool);
template void softmax_backward_row<double>(double*, const double*, const double*, int64_t, bool);
template void softmax_forward<float>(float*, const float*, int64_t, int64_t, int64_t, bool);
template void softmax_forward<double>(double*, const double*, int64_t, int64_t, int64_t, bool);
template void softmax_backward<float>(float*, const float*, const float*, int64_t, int64_t, int64_t,
                                      bool);
template void softmax_backward<double>(double*, const double*, const double*, int64_t, int64_t,
                                       int64_t, bool);

}  // namespace tg::cpu
