// ops/binary/cpu/binary.cpp — CPU kernels of the broadcasting ops: arithmetic (add … min), comparisons
// and where (which masked_fill and the masks' gradients use). One broadcast walk for all of them:
// the output's dims are merged where every operand is laid out alike, which leaves `outer` rows
// of `inner` elements; each operand's row is either a full contiguous row or one broadcast
// element, and each row is one xtensor + xsimd expression over 1-D adaptors (pow: simd.hpp's
// pow_map, xsimd with its special lanes recomputed by std::pow). (xtensor's own N-d
// broadcasting falls back to scalar code when an operand is broadcast along the last dim, the
// (N, 1) case that per-row statistics and masks hit; rows keep every case vectorised.)
// The ops outside the shared kernel table (binary_extra.hpp: floor/trunc division, fmod,
// remainder, integer pow, bitwise ops and shifts) are PyTorch's scalar formulas over the same
// walk, one plain loop per op, which the compiler vectorises where the formula allows; so are
// int64 add, sub and mul, which wrap on overflow as PyTorch's.
// Deliberately not here: unary ops (unary.cpp), the op bodies and their checks (ops/<family>/*.cpp).
#include "ops/binary/cpu/extra.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cpu/reduced.hpp"
#include "ops/core/cpu/simd.hpp"
#include "ops/core/cpu/xt.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
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

// int64 add, sub and mul wrap on overflow (two's complement), as PyTorch's kernels do on every
// machine it runs on: computed in uint64_t, where wrapping is defined (int64_t's overflow is not,
// in xtensor's scalar tail as anywhere). A plain loop the compiler vectorises. ra (rb): a's (b's)
// row is full, else one element repeated. Returns false for the other ops.
bool wrapping_span(BinOp op, int64_t* o, const int64_t* a, bool ra, const int64_t* b, bool rb,
                   int64_t n) {
  auto run = [&](auto f) {
    const int64_t ia = ra, ib = rb;
    for (int64_t j = 0; j < n; ++j)
      o[j] = static_cast<int64_t>(
          f(static_cast<uint64_t>(a[j * ia]), static_cast<uint64_t>(b[j * ib])));
    return true;
  };
  switch (op) {
    case BinOp::Add:
      return run([](uint64_t x, uint64_t y) { return x + y; });
    case BinOp::Sub:
      return run([](uint64_t x, uint64_t y) { return x - y; });
    case BinOp::Mul:
      return run([](uint64_t x, uint64_t y) { return x * y; });
    default:
      return false;
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
      if constexpr (std::is_same_v<T, int64_t> && std::is_same_v<O, int64_t>) {
        if (wrapping_span(op, o, pa, ra, pb, rb, n)) return;
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

void binary_flat_reduced(BinOp op, kern::DT dt, void* out, const void* a, const void* b,
                         int64_t n) {
  reduced::elementwise<2>(dt, n, out, {a, b}, [&](float* o, const float* const* in, int64_t m) {
    const Shape s{m};
    binary<float, float>(op, o, in[0], in[1], s, s, s);
  });
}

// ---- the ops outside the kernel table (binary_extra.hpp) ----
namespace {
// out = f(a, b) over the broadcast walk: a flat loop when each operand is full or one element.
template <typename T, typename F>
void map_pairs(T* out, const T* a, const T* b, const Shape& so, const Shape& sa, const Shape& sb,
               F f) {
  const int64_t no = shape_numel(so), na = shape_numel(sa), nb = shape_numel(sb);
  if (no == 0) return;
  auto span = [&](T* o, const T* pa, int64_t ia, const T* pb, int64_t ib, int64_t n) {
    for (int64_t j = 0; j < n; ++j) o[j] = f(pa[j * ia], pb[j * ib]);
  };
  if ((na == no || na == 1) && (nb == no || nb == 1)) {
    const int64_t ia = na == no, ib = nb == no;
    xtd::chunks(
        no,
        [&](int64_t lo, int64_t hi) { span(out + lo, a + lo * ia, ia, b + lo * ib, ib, hi - lo); },
        sizeof(T));
    return;
  }
  const Walk w = make_walk(so, {&sa, &sb});
  xtd::for_rows<2>(w, [&](int64_t r, const std::array<int64_t, 2>& off) {
    span(out + r * w.inner, a + off[0], w.inner_stride(0), b + off[1], w.inner_stride(1), w.inner);
  });
}

// int64 arithmetic that overflows wraps around (two's complement), as PyTorch's kernels do on
// every machine it runs on: computed in uint64_t, where wrapping is defined.
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
inline int64_t wrap_neg(int64_t a) { return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); }

// PyTorch 1.13's scalar formulas (aten/src/ATen/native/cpu/BinaryOpsKernel.cpp). An int64 divisor
// is never 0 here (the op raised ZeroDivisionError). INT64_MIN / -1 overflows (PyTorch 1.13 dies
// of SIGFPE there): the quotient wraps to INT64_MIN as INT64_MIN * -1 does, and fmod and
// remainder by -1 are 0, the exact answer.
template <typename T>
T floor_div(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == -1) return wrap_neg(a);
    const T q = a / b, r = a % b;
    return r != 0 && ((r < 0) != (b < 0)) ? q - 1 : q;
  } else {
    // Python's a // b: (a - fmod(a, b)) / b is exact, then moved down where the signs differ;
    // division by 0 gives IEEE's a / b, a zero quotient keeps a / b's sign.
    if (b == 0) return a / b;
    const T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= T(1);
    if (div == 0) return std::copysign(T(0), a / b);
    T fl = std::floor(div);
    if (div - fl > T(0.5)) fl += T(1);
    return fl;
  }
}
template <typename T>
T trunc_div(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return b == -1 ? wrap_neg(a) : a / b;
  else
    return std::trunc(a / b);
}
// The dividend's sign; fmod(x, ±inf) = x and fmod(±0, y) = ±0 (IEEE).
template <typename T>
T fmod_of(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return b == -1 ? 0 : a % b;
  else
    return std::fmod(a, b);
}
// The divisor's sign: fmod moved by b where the signs differ (remainder(-1, inf) = inf, as torch).
template <typename T>
T remainder_of(T a, T b) {
  const T m = fmod_of(a, b);
  return m != 0 && ((b < 0) != (m < 0)) ? m + b : m;
}
// a^b by squaring, wrapping on overflow. A negative b gives 1 / a^|b| truncated: 1 for a = 1,
// ±1 for a = -1, 0 otherwise (PyTorch's powi; its tensor-scalar form refuses negative b first).
inline int64_t powi(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 != 0 ? -1 : 1) : 0;
  int64_t r = 1;
  for (; b != 0; b /= 2) {
    if (b & 1) r = wrap_mul(r, a);
    a = wrap_mul(a, a);
  }
  return r;
}
// Shift counts outside [0, 63] shift every bit out (0, or the sign for >>): later PyTorch's
// defined rule. PyTorch 1.13 shifts by the count mod 64 there (C++'s undefined behaviour on x86).
inline int64_t shl(int64_t a, int64_t b) {
  return b < 0 || b > 63 ? 0 : static_cast<int64_t>(static_cast<uint64_t>(a) << b);
}
inline int64_t shr(int64_t a, int64_t b) { return a >> (b < 0 || b > 63 ? 63 : b); }
}  // namespace

template <typename T>
void binary_extra(XOp op, T* out, const T* a, const T* b, const Shape& so, const Shape& sa,
                  const Shape& sb) {
  auto run = [&](auto f) { map_pairs(out, a, b, so, sa, sb, f); };
  if constexpr (std::is_same_v<T, bool>) {
    if (op == XOp::And) return run([](bool x, bool y) { return x && y; });
    if (op == XOp::Or) return run([](bool x, bool y) { return x || y; });
    if (op == XOp::Xor) return run([](bool x, bool y) { return x != y; });
  } else {
    if (op == XOp::FloorDiv) return run([](T x, T y) { return floor_div(x, y); });
    if (op == XOp::TruncDiv) return run([](T x, T y) { return trunc_div(x, y); });
    if (op == XOp::Fmod) return run([](T x, T y) { return fmod_of(x, y); });
    if (op == XOp::Remainder) return run([](T x, T y) { return remainder_of(x, y); });
    if constexpr (std::is_same_v<T, int64_t>) {
      if (op == XOp::Pow) return run(powi);
      if (op == XOp::And) return run([](T x, T y) { return x & y; });
      if (op == XOp::Or) return run([](T x, T y) { return x | y; });
      if (op == XOp::Xor) return run([](T x, T y) { return x ^ y; });
      if (op == XOp::Shl) return run(shl);
      if (op == XOp::Shr) return run(shr);
    }
  }
  throw Error(
      fmt::format("binary_extra: op code {} has no kernel for this dtype", static_cast<int>(op)));
}
template void binary_extra<float>(XOp, float*, const float*, const float*, const Shape&,
                                  const Shape&, const Shape&);
template void binary_extra<double>(XOp, double*, const double*, const double*, const Shape&,
                                   const Shape&, const Shape&);
template void binary_extra<int64_t>(XOp, int64_t*, const int64_t*, const int64_t*, const Shape&,
                                    const Shape&, const Shape&);
template void binary_extra<bool>(XOp, bool*, const bool*, const bool*, const Shape&, const Shape&,
                                 const Shape&);

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
// bfloat16 / float16: a select moves whole elements (their bits).
template void where<uint16_t>(uint16_t*, const bool*, const uint16_t*, const uint16_t*,
                              const Shape&, const Shape&, const Shape&, const Shape&);

}  // namespace tg::cpu
