// ops/shape/cpu/copy.cpp — the CPU strided copy behind every reordering shape op (transpose,
// permute, expand, narrow/slice with steps, and the adjoint scatter of their backward): out and x
// walked over one index space through their own element strides (xtd::Walk merges what it can).
//   - Rows contiguous on both sides (permutes that keep the last dim, narrow, expand of leading
//     dims): one xtensor 1-D assignment per row.
//   - A transpose of the last two dims: a blocked hand loop, 32 x 32 tiles (assigning an
//     xt::transpose view is far slower: docs/cpu-kernels.md).
//   - Anything else (an inner stride on the output side): a plain strided loop per row.
// Deliberately not here: cat/split (whole blocks: memcpy in ops/shape/join.cpp), index_select.
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cpu/xt.hpp"

#include <algorithm>

namespace tg::cpu {

template <typename T>
void strided_copy(T* out, const Shape& out_strides, const T* x, const Shape& x_strides,
                  const Shape& shape) {
  if (shape_numel(shape) == 0) return;
  const xtd::Walk w(shape, {out_strides, x_strides});
  const int64_t n = w.inner, so = w.inner_stride(0), sx = w.inner_stride(1);
  const size_t nd = w.dims.size();
  if (so == 1 && sx != 1 && nd >= 2 && w.strides[1][nd - 2] == 1 && n >= 8) {
    // out[i][j] = x[j][i] over the last two dims: tiles keep both sides in cache.
    const int64_t R = w.dims[nd - 2], ro = w.strides[0][nd - 2];
    const int64_t blocks = w.outer / R;
    auto offsets = [&](int64_t r, size_t k) {  // operand k's offset of outer row r
      int64_t off = 0;
      for (size_t d = nd - 1; d-- > 0;) {
        off += (r % w.dims[d]) * w.strides[k][d];
        r /= w.dims[d];
      }
      return off;
    };
    constexpr int64_t kTile = 32;
    detail::parallel_for(blocks, w.outer * n, [&](int64_t b) {
      T* o = out + offsets(b * R, 0);
      const T* s = x + offsets(b * R, 1);
      for (int64_t i0 = 0; i0 < R; i0 += kTile)
        for (int64_t j0 = 0; j0 < n; j0 += kTile) {
          const int64_t i1 = std::min(R, i0 + kTile), j1 = std::min(n, j0 + kTile);
          for (int64_t i = i0; i < i1; ++i)
            for (int64_t j = j0; j < j1; ++j) o[i * ro + j] = s[i + j * sx];
        }
    });
    return;
  }
  xtd::for_rows<2>(w, [&](int64_t, const std::array<int64_t, 2>& off) {
    T* o = out + off[0];
    const T* s = x + off[1];
    if (so == 1 && sx == 1) {
      if constexpr (std::is_same_v<T, bool>)
        std::copy(s, s + n, o);
      else
        xt::noalias(xtd::vec(o, n)) = xtd::vec(s, n);
    } else {
      for (int64_t j = 0; j < n; ++j) o[j * so] = s[j * sx];
    }
  });
}

template void strided_copy<float>(float*, const Shape&, const float*, const Shape&, const Shape&);
template void strided_copy<double>(double*, const Shape&, const double*, const Shape&,
                                   const Shape&);
template void strided_copy<int64_t>(int64_t*, const Shape&, const int64_t*, const Shape&,
                                    const Shape&);
template void strided_copy<bool>(bool*, const Shape&, const bool*, const Shape&, const Shape&);
// Data movement by element size (dispatch_bits): every dtype, the reduced ones included.
template void strided_copy<uint8_t>(uint8_t*, const Shape&, const uint8_t*, const Shape&,
                                    const Shape&);
template void strided_copy<uint16_t>(uint16_t*, const Shape&, const uint16_t*, const Shape&,
                                     const Shape&);
template void strided_copy<uint32_t>(uint32_t*, const Shape&, const uint32_t*, const Shape&,
                                     const Shape&);
template void strided_copy<uint64_t>(uint64_t*, const Shape&, const uint64_t*, const Shape&,
                                     const Shape&);

}  // namespace tg::cpu
