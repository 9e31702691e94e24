// ops/cpu/binary.cpp — CPU kernels of the broadcasting ops: arithmetic (add … min), comparisons
// and where (which masked_fill and the masks' gradients use). One broadcast walk for all of them:
// the output's dims are merged where every operand is laid out alike, which leaves `outer` rows
// of `inner` elements; each operand's row is either a full contiguous row or one broadcast
// element, and each row is one xtensor + xsimd expression over 1-D adaptors (pow: simd.hpp's
// pow_map, xsimd with its special lanes recomputed by std::pow). (xtensor's own N-d
// broadcasting falls back to scalar code when an operand is broadcast along the last dim, the
// (N, 1) case that per-row statistics and masks hit; rows keep every case vectorised.)
// Deliberately not here: unary ops (unary.cpp), the op bodies and their checks (ops/*.cpp).
#include "ops/cpu/kernels.hpp"
#include "ops/cpu/simd.hpp"
#include "ops/cpu/xt.hpp"

#include <cmath>
#include <type_traits>

namespace tg::cpu {
using xtd::vec;
using xtd::Walk;

namespace {

Walk make_walk(const Shape& out, std::initializer_list<const Shape*> ins) {
  std::vector<Shape> st;
  for (const Shape* s : ins) st.push_back(detail::broadcast_strides(*s, out));
  return Walk(out, st);
}

// The value of op at one pair (also the reference the vectorised forms must match).
template <typename O, typename X, typename Y>
void apply(BinOp op, O&& out, const X& a, const Y& b) {
  switch (op) {
    case BinOp::Add:
      xt::noalias(out) = a + b;
      break;
    case BinOp::Sub:
      xt::noalias(out) = a - b;
      break;
    case BinOp::Mul:
      xt::noalias(out) = a * b;
      break;
    case BinOp::Div:
      xt::noalias(out) = a / b;
      break;
    case BinOp::Pow:  // floating T takes simd.hpp's pow_map in binary() instead
      xt::noalias(out) = xt::pow(a, b);
      break;
    // NaN propagates (a + b is NaN when either is), like torch.maximum. xt::isnan, not a != a:
    // xsimd's != is an ordered compare (false for NaN).
    case BinOp::Max:
      xt::noalias(out) = xt::where(xt::isnan(a) || xt::isnan(b), a + b, xt::where(a > b, a, b));
      break;
    case BinOp::Min:
      xt::noalias(out) = xt::where(xt::isnan(a) || xt::isnan(b), a + b, xt::where(a < b, a, b));
      break;
    case BinOp::Eq:
      xt::noalias(out) = xt::equal(a, b);
      break;
    case BinOp::Ne:
      xt::noalias(out) = !xt::equal(a, b);  // xsimd != is ordered: false for NaN
      break;
    case BinOp::Lt:
      xt::noalias(out) = a < b;
      break;
    case BinOp::Le:
      xt::noalias(out) = a <= b;
      break;
    case BinOp::Gt:
      xt::noalias(out) = a > b;
      break;
    case BinOp::Ge:
      xt::noalias(out) = a >= b;
      break;
  }
}

}  // namespace

template <typename T, typename O>
void binary(BinOp op, O* out, const T* a, const T* b, const Shape& so, const Shape& sa,
            const Shape& sb) {
  if (shape_numel(so) == 0) return;
  if constexpr (std::is_same_v<T, bool>) {
    // bool operands (comparisons only): plain loops, xsimd has no bool arithmetic batches.
    const Walk w = make_walk(so, {&sa, &sb});
    xtd::for_rows<2>(w, [&](int64_t r, const std::array<int64_t, 2>& off) {
      O* o = out + r * w.inner;
      const T *pa = a + off[0], *pb = b + off[1];
      const int64_t ia = w.strides[0].back() != 0, ib = w.strides[1].back() != 0;
      for (int64_t j = 0; j < w.inner; ++j) {
        const bool x = pa[j * ia], y = pb[j * ib];
        bool v = false;
        switch (op) {
          case BinOp::Eq:
            v = x == y;
            break;
          case BinOp::Ne:
            v = x != y;
            break;
          case BinOp::Lt:
            v = x < y;
            break;
          case BinOp::Le:
            v = x <= y;
            break;
          case BinOp::Gt:
            v = x > y;
            break;
          case BinOp::Ge:
            v = x >= y;
            break;
          default:
            v = false;
        }
        o[j] = static_cast<O>(v);
      }
    });
  } else {
    // Same shapes or a one-element operand (most calls, tiny ones included) need no walk: its
    // bookkeeping allocates, which a 4-element op would pay twice over.
    const int64_t no = shape_numel(so), na = shape_numel(sa), nb = shape_numel(sb);
    const bool flat = (na == no || na == 1) && (nb == no || nb == 1);
    const Walk w = flat ? Walk() : make_walk(so, {&sa, &sb});
    const bool ra = flat ? na == no : w.strides[0].back() != 0,
               rb = flat ? nb == no : w.strides[1].back() != 0;
    // n outputs at o from a row (or one broadcast element) of each operand.
    auto span = [&](O* o, const T* pa, const T* pb, int64_t n) {
      if constexpr (std::is_floating_point_v<T> && std::is_same_v<T, O>) {
        if (op == BinOp::Pow) {  // std::pow's values (simd.hpp's pow_map)
          xtd::pow_map(o, pa, ra, pb, rb, n);
          return;
        }
      }
      auto vo = vec(o, n);
      if (ra && rb)
        apply(op, vo, vec(pa, n), vec(pb, n));
      else if (ra)
        apply(op, vo, vec(pa, n), xt::xscalar<T>(pb[0]));
      else if (rb)
        apply(op, vo, xt::xscalar<T>(pa[0]), vec(pb, n));
      else {  // both broadcast along the row: one value, repeated
        apply(op, vec(o, 1), vec(pa, 1), vec(pb, 1));
        std::fill(o + 1, o + n, o[0]);
      }
    };
    if (flat || w.outer == 1) {  // one long row (same shapes, or a scalar operand): per thread
      xtd::chunks(
          flat ? no : w.inner,
          [&](int64_t lo, int64_t hi) {
            span(out + lo, ra ? a + lo : a, rb ? b + lo : b, hi - lo);
          },
          sizeof(T));
    } else {
      xtd::for_rows<2>(w, [&](int64_t r, const std::array<int64_t, 2>& off) {
        span(out + r * w.inner, a + off[0], b + off[1], w.inner);
      });
    }
  }
}

template <typename T>
void where(T* out, const bool* cond, const T* a, const T* b, const Shape& so, const Shape& sc,
           const Shape& sa, const Shape& sb) {
  const int64_t no = shape_numel(so), nc = shape_numel(sc), na = shape_numel(sa),
                nb = shape_numel(sb);
  if (no == 0) return;
  // Each operand full (laid out like out) or one element: no walk (its bookkeeping allocates).
  const bool flat = (nc == no || nc == 1) && (na == no || na == 1) && (nb == no || nb == 1);
  const Walk w = flat ? Walk() : make_walk(so, {&sc, &sa, &sb});
  const bool rc = flat ? nc == no : w.strides[0].back() != 0,
             ra = flat ? na == no : w.strides[1].back() != 0,
             rb = flat ? nb == no : w.strides[2].back() != 0;
  // n outputs at o from a row (or one broadcast element) of each operand.
  auto span = [&](T* o, const bool* c, const T* pa, const T* pb, int64_t n) {
    if (!rc) {  // one condition for the whole row: a copy of one side
      const T* src = c[0] ? pa : pb;
      if (c[0] ? ra : rb) {
        if constexpr (std::is_same_v<T, bool>)
          std::copy(src, src + n, o);
        else
          xt::noalias(vec(o, n)) = vec(src, n);
      } else {
        std::fill(o, o + n, src[0]);
      }
      return;
    }
    if constexpr (std::is_same_v<T, bool>) {  // xsimd has no bool batches: a plain loop
      for (int64_t j = 0; j < n; ++j) o[j] = c[j] ? pa[ra ? j : 0] : pb[rb ? j : 0];
    } else {  // bool → T select: xtensor's where over a bool adaptor, rows of T
      auto C = vec(c, n);
      auto O = vec(o, n);
      if (ra && rb)
        xt::noalias(O) = xt::where(C, vec(pa, n), vec(pb, n));
      else if (ra)
        xt::noalias(O) = xt::where(C, vec(pa, n), pb[0]);
      else if (rb)
        xt::noalias(O) = xt::where(C, pa[0], vec(pb, n));
      else
        xt::noalias(O) = xt::where(C, pa[0], pb[0]);
    }
  };
  if (flat) {
    xtd::chunks(
        no,
        [&](int64_t lo, int64_t hi) {
          span(out + lo, rc ? cond + lo : cond, ra ? a + lo : a, rb ? b + lo : b, hi - lo);
        },
        sizeof(T));
    return;
  }
  xtd::for_rows<3>(w, [&](int64_t r, const std::array<int64_t, 3>& off) {
    span(out + r * w.inner, cond + off[0], a + off[1], b + off[2], w.inner);
  });
}

#define TG_BINARY(T, O)                                                                 \
  template void binary<T, O>(BinOp, O*, const T*, const T*, const Shape&, const Shape&, \
                             const Shape&);
TG_BINARY(float, float)
TG_BINARY(double, double)
TG_BINARY(int64_t, int64_t)
TG_BINARY(float, bool)
TG_BINARY(double, bool)
TG_BINARY(int64_t, bool)
TG_BINARY(bool, bool)
#undef TG_BINARY
template void where<float>(float*, const bool*, const float*, const float*, const Shape&,
                           const Shape&, const Shape&, const Shape&);
template void where<double>(double*, const bool*, const double*, const double*, const Shape&,
                            const Shape&, const Shape&, const Shape&);
template void where<int64_t>(int64_t*, const bool*, const int64_t*, const int64_t*, const Shape&,
                             const Shape&, const Shape&, const Shape&);
template void where<bool>(bool*, const bool*, const bool*, const bool*, const Shape&, const Shape&,
                          const Shape&, const Shape&);

}  // namespace tg::cpu
