// ops/binary_math.cpp — the binary math a PyTorch port reaches for, composed from recorded ops
// (so each backward is theirs, exact by construction, and differentiable again): fmod,
// remainder, copysign, lerp, logaddexp, isclose and the logical and / or / xor. Broadcasting,
// dtype rules and edge cases are PyTorch's: fmod's result takes the dividend's sign, remainder's
// the divisor's (Python's %), copysign reads the sign bit (so -0 and -NaN count as negative),
// logaddexp(-inf, -inf) = -inf. Deliberately not here: the kernels (the ops they compose).
#include "autograd/tape.hpp"
#include "ops/cuda_dispatch.hpp"
#include "ops/detail.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace tg {
using namespace detail;

namespace {
// Both float operands of a binary op of one dtype and device (messages name op and shapes).
void check_pair(const Tensor& a, const Tensor& b, const char* op) {
  check_defined(a, op, "input");
  check_defined(b, op, "other");
  check_float(a, op, "input", true);
  check_float(b, op, "other", true);
  check_same_dtype(a, b, op, "input", "other");
  check_same_device(a, b, op, "input", "other");
  broadcast_shapes(a.shape(), b.shape(), op);
}
Tensor scalar_like(double v, const Tensor& t) { return full({}, v, t.dtype(), t.device()); }
// True where x's sign bit is set: x < 0, -0 (1/x = -inf) and NaNs with the bit set are not
// distinguishable here, so NaN counts as positive (what std::signbit gives for the default NaN).
Tensor signbit(const Tensor& x) {
  NoGradGuard ng;
  const Tensor neg_zero = logical_and(eq(x, 0.0), lt(rdiv(1.0, x), 0.0));
  return logical_or(lt(x, 0.0), neg_zero);
}
Tensor as_bool(const Tensor& x) { return x.dtype() == kBool ? x : ne(x, 0.0); }
}  // namespace

namespace {
// One node over a and b whose value was computed without a tape: d/da = g·da, d/db = g·db
// (each undefined: a zero gradient of that operand's shape), summed to each operand's shape.
Tensor binary_node(const char* op, Tensor y, const Tensor& a, const Tensor& b, Tensor da,
                   Tensor db) {
  // da and db are piecewise constant (fmod, remainder, copysign): linear in g, so differentiable
  record(
      op, y, {a, b}, RecordInfo().differentiable(),
      [as = a.shape(), bs = b.shape(), da, db, dt = a.dtype(), dev = a.device()](const Tensor& g) {
        return std::vector<Tensor>{da.defined() ? sum_to(mul(g, da), as) : sum_to(g, as),
                                   db.defined() ? sum_to(mul(g, db), bs) : zeros(bs, dt, dev)};
      });
  return y;
}
}  // namespace

namespace {
// fmod's value without a tape: ad - q·bd with q = trunc(ad / bd), a zero keeping ad's sign.
Tensor fmod_value(const Tensor& ad, const Tensor& bd, const Tensor& q) {
  NoGradGuard ng;
  const Tensor y = sub(ad, mul(q, bd));
  return where(eq(y, 0.0), mul(ad, 0.0), y);
}
}  // namespace

// C's fmod: input - trunc(input / other) · other, with the dividend's sign (-0 included).
// d/dinput = 1, d/dother = -trunc(input / other), PyTorch's.
Tensor fmod(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  check_pair(a, b, "fmod");
  const Tensor ad = a.detach(), bd = b.detach(), q = trunc(div(ad, bd));  // no tape: detached
  return binary_node("fmod", fmod_value(ad, bd, q), a, b, Tensor(), neg(q));
}
Tensor fmod(const Tensor& a, double b, Site site) { return fmod(a, scalar_like(b, a), site); }

// Python's %: fmod moved by other where their signs differ, so the result takes the divisor's
// sign (PyTorch's). d/dinput = 1, d/dother = -floor(input / other).
Tensor remainder(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  check_pair(a, b, "remainder");
  const Tensor ad = a.detach(), bd = b.detach(), q = floor(div(ad, bd));  // no tape: detached
  const Tensor m = fmod_value(ad, bd, trunc(div(ad, bd)));
  const Tensor move = logical_and(ne(m, 0.0), logical_xor(lt(bd, 0.0), lt(m, 0.0)));
  return binary_node("remainder", where(move, add(m, bd), m), a, b, Tensor(), neg(q));
}
Tensor remainder(const Tensor& a, double b, Site site) {
  return remainder(a, scalar_like(b, a), site);
}

// |input| with the sign bit of other. d/dinput = sign(input)·(±1) (0 at input = 0), d/dother = 0.
Tensor copysign(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  check_pair(a, b, "copysign");
  Tensor y, da;
  {
    NoGradGuard ng;
    const Tensor ad = a.detach(), m = abs(ad), neg_b = signbit(b.detach());
    y = where(neg_b, neg(m), m);
    da = mul(sign(ad), where(neg_b, scalar_like(-1.0, ad), scalar_like(1.0, ad)));
  }
  return binary_node("copysign", y, a, b, da, zeros({}, a.dtype(), a.device()));
}
Tensor copysign(const Tensor& a, double b, Site site) {
  return copysign(a, scalar_like(b, a), site);
}

// input + weight · (end - input), PyTorch's two-sided form for |weight| >= 0.5
// (end - (end - input)·(1 - weight)), which is exact at weight = 1.
Tensor lerp(const Tensor& a, const Tensor& end, const Tensor& w, Site site) {
  SiteScope scope(site);
  check_pair(a, end, "lerp");
  check_float(w, "lerp", "weight", true);
  check_same_dtype(a, w, "lerp", "input", "weight");
  const Tensor d = sub(end, a);
  Tensor small;
  {
    NoGradGuard ng;
    small = lt(abs(w.detach()), 0.5);
  }
  return where(small, add(a, mul(w, d)), sub(end, mul(d, rsub(1.0, w))));
}
Tensor lerp(const Tensor& a, const Tensor& end, double w, Site site) {
  return lerp(a, end, scalar_like(w, a), site);
}

// log(exp(a) + exp(b)) = max(a, b) + log1p(exp(-|a - b|)), stable; equal infinities give
// themselves. One node: d/da = sigmoid(a - b), d/db = sigmoid(b - a) (1/2 each at a = b), as
// recorded ops.
Tensor logaddexp(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  check_pair(a, b, "logaddexp");
  Tensor y;
  {
    NoGradGuard ng;
    const Tensor ad = a.detach(), bd = b.detach();
    y = add(maximum(ad, bd), log1p(exp(neg(abs(sub(ad, bd))))));
    y = where(logical_and(eq(ad, bd), isinf(ad)), ad, y);
  }
  record("logaddexp", y, {a, b}, RecordInfo().differentiable(),
         [ad_ = a.detach(), bd_ = b.detach()](const Tensor& g) {
           const Tensor ad = saved_input(ad_, 0), bd = saved_input(bd_, 1);
           const Tensor d = sub(ad, bd);
           return std::vector<Tensor>{sum_to(mul(g, sigmoid(d)), ad.shape()),
                                      sum_to(mul(g, sigmoid(neg(d))), bd.shape())};
         });
  return y;
}

// |a - b| <= atol + rtol·|b| elementwise (NumPy's / PyTorch's asymmetric test), infinities
// close only to themselves, NaN close to NaN only with equal_nan. No gradient.
Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan,
               Site site) {
  SiteScope scope(site);
  check_pair(a, b, "isclose");
  if (!(rtol >= 0) || !(atol >= 0))
    throw Error(fmt::format("isclose: rtol {} and atol {} must be >= 0 (input {}, other {})", rtol,
                            atol, shape_str(a.shape()), shape_str(b.shape())));
  NoGradGuard ng;
  const Tensor ad = a.detach(), bd = b.detach();
  Tensor close = le(abs(sub(ad, bd)), add(mul(abs(bd), rtol), atol));
  close = logical_and(close, logical_and(isfinite(ad), isfinite(bd)));
  close = logical_or(close, eq(ad, bd));  // equal infinities
  if (equal_nan) close = logical_or(close, logical_and(isnan(ad), isnan(bd)));
  return close;
}

Tensor logical_and(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  check_defined(a, "logical_and", "input");
  check_defined(b, "logical_and", "other");
  return where(as_bool(a), as_bool(b), zeros({}, kBool, a.device()));
}
Tensor logical_or(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  check_defined(a, "logical_or", "input");
  check_defined(b, "logical_or", "other");
  return where(as_bool(a), full({}, 1.0, kBool, a.device()), as_bool(b));
}
Tensor logical_xor(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  check_defined(a, "logical_xor", "input");
  check_defined(b, "logical_xor", "other");
  return ne(as_bool(a), as_bool(b));
}

}  // namespace tg
