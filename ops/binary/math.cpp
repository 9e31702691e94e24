// ops/binary/math.cpp — the binary math a PyTorch port reaches for: the division family (fmod,
// remainder, div with a rounding mode, floor_divide) on float and int64, its values from the CPU
// kernels outside the shared table and its backward in recorded ops; copysign, lerp, logaddexp,
// isclose and the logical and / or / xor, composed from recorded ops (so each backward is theirs,
// exact by construction, and differentiable again). Broadcasting, dtype rules and edge
// cases are PyTorch's: fmod's result takes the dividend's sign, remainder's the divisor's
// (Python's %), both std::fmod's exact values (fmod(x, ±inf) = x); int64 stays int64 and an
// integer division by 0 raises ZeroDivisionError; copysign reads the sign bit (so -0 and -NaN
// count as negative), logaddexp(-inf, -inf) = -inf. Also the tensor face of the kernels outside
// the shared table (ops/binary/extra_op.hpp).
// Deliberately not here: the kernels (ops/binary/cpu/binary.cpp), true division and pow
// (ops/binary/elementwise.cpp), the bitwise ops (ops/binary/bitwise.cpp).
#include "autograd/tape.hpp"
#include "ops/binary/extra_op.hpp"
#include "ops/core/widen.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
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

// ---- the kernels outside the shared table (ops/binary/extra_op.hpp) ----
namespace detail {
Tensor binary_extra(const char* op, cpu::XOp code, const Tensor& a_in, const Tensor& b_in) {
  NoGradGuard ng;
  if (on_cuda(a_in))  // no CUDA kernels: the CPU's, on host copies
    return binary_extra(op, code, a_in.cpu(), b_in.cpu()).to(a_in.device());
  if (is_reduced(a_in.dtype()))  // the float32 kernel on float32 copies, rounded once
    return narrow(binary_extra(op, code, widen(a_in), widen(b_in)), a_in.dtype());
  Tensor ha, hb;
  const Tensor &a = dense_ref(a_in, ha), &b = dense_ref(b_in, hb);
  const Shape os = broadcast_shapes(a.shape(), b.shape(), op);
  Tensor out = Tensor::empty(os, a.dtype());
  dispatch_all(a.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    cpu::binary_extra<T>(code, out.data<T>(), a.data<T>(), b.data<T>(), os, a.shape(), b.shape());
  });
  return out;
}
void check_operands(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(a, op, "input");
  check_defined(b, op, "other");
  check_same_device(a, b, op, "input", "other");
  check_same_dtype(a, b, op, "input", "other");
  broadcast_shapes(a.shape(), b.shape(), op);
}
DType reduced_promotion(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.dtype() == b.dtype()) return kBool;
  if (!is_floating(a.dtype()) || !is_floating(b.dtype())) return kBool;
  if (!is_reduced(a.dtype()) && !is_reduced(b.dtype())) return kBool;
  return promote_types(a.dtype(), b.dtype());
}
DType reduced_result(const Tensor& a, const Tensor& b) {
  if (a.dim() == 0 && b.dim() > 0) return b.dtype();
  if (b.dim() == 0 && a.dim() > 0) return a.dtype();
  return reduced_promotion(a, b);
}
void check_int_divisor(const char* op, const Tensor& b_in) {
  if (b_in.dtype() != kInt64) return;
  const Tensor host = on_cuda(b_in) ? b_in.detach().cpu() : b_in;
  Tensor hb;
  const Tensor& b = dense_ref(host, hb);
  const int64_t* p = b.data<int64_t>();
  for (int64_t i = 0; i < b.numel(); ++i)
    if (p[i] == 0)
      throw Error(fmt::format(
          "{}: ZeroDivisionError: integer division by zero (other {} of dtype int64 holds 0 at "
          "flat index {})",
          op, shape_str(b.shape()), i));
}
bool is_int_scalar(double v) {
  // [-2^63, 2^63): the doubles that convert to int64 exactly
  return std::isfinite(v) && v == std::trunc(v) && v >= -9223372036854775808.0 &&
         v < 9223372036854775808.0;
}
Tensor int64_scalar(int64_t v, Device device) {
  Tensor t = Tensor::empty({}, kInt64);
  t.data<int64_t>()[0] = v;
  return device.type == DeviceType::CPU ? t : t.to(device);
}
}  // namespace detail

namespace {
using cpu::XOp;
// Both operands of a division-family op: one device and dtype, float or int64, broadcastable.
void check_division(const char* op, const Tensor& a, const Tensor& b) {
  check_operands(op, a, b);
  if (!is_floating(a.dtype()) && a.dtype() != kInt64)
    throw Error(
        fmt::format("{}: input {} and other {} have dtype {}, expected float32, float64 "
                    "or int64",
                    op, shape_str(a.shape()), shape_str(b.shape()), dtype_name(a.dtype())));
}
// The number b as the operand of a: a 0-dim tensor of a's dtype, except that an int64 a meets a
// number that is not an integer in the default float dtype (PyTorch's Python-float promotion),
// a converted with it. Calls f(a', b').
template <typename F>
Tensor with_number(const char* op, const Tensor& a, double b, F f) {
  check_defined(a, op, "input");
  if (a.dtype() == kInt64 && !is_int_scalar(b)) {
    const DType dt = get_default_dtype();
    return f(a.to(dt), full({}, b, dt, a.device()));
  }
  if (a.dtype() == kInt64) return f(a, int64_scalar(static_cast<int64_t>(b), a.device()));
  return f(a, full({}, b, a.dtype(), a.device()));
}
// An int64 op of the division family: the divisor checked for zeros, then the kernel.
Tensor int_division(const char* op, XOp code, const Tensor& a, const Tensor& b) {
  check_int_divisor(op, b);
  return binary_extra(op, code, a, b);
}
}  // namespace

// C's fmod: input - trunc(input / other) · other, exactly (std::fmod), the dividend's sign.
// d/dinput = 1, d/dother = -trunc(input / other) (PyTorch's; 0 at other = ±inf).
Tensor fmod(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  if (const DType p = reduced_promotion(a, b); p != kBool)
    return fmod(a.to(p), b.to(p), site).to(reduced_result(a, b));
  check_division("fmod", a, b);
  if (a.dtype() == kInt64) return int_division("fmod", XOp::Fmod, a, b);
  const Tensor y = binary_extra("fmod", XOp::Fmod, a, b);
  if (!needs_record({&a, &b})) return y;
  return binary_node("fmod", y, a, b, Tensor(), neg(binary_extra("fmod", XOp::TruncDiv, a, b)));
}
Tensor fmod(const Tensor& a, double b, Site site) {
  return with_number("fmod", a, b,
                     [&](const Tensor& x, const Tensor& y) { return fmod(x, y, site); });
}

// Python's %: fmod moved by other where their signs differ, so the result takes the divisor's
// sign (remainder(-1, inf) = inf, as PyTorch). d/dinput = 1, d/dother = -floor(input / other)
// with PyTorch's floor division (so -1 at (-1, inf)).
Tensor remainder(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  if (const DType p = reduced_promotion(a, b); p != kBool)
    return remainder(a.to(p), b.to(p), site).to(reduced_result(a, b));
  check_division("remainder", a, b);
  if (a.dtype() == kInt64) return int_division("remainder", XOp::Remainder, a, b);
  const Tensor y = binary_extra("remainder", XOp::Remainder, a, b);
  if (!needs_record({&a, &b})) return y;
  return binary_node("remainder", y, a, b, Tensor(),
                     neg(binary_extra("remainder", XOp::FloorDiv, a, b)));
}
Tensor remainder(const Tensor& a, double b, Site site) {
  return with_number("remainder", a, b,
                     [&](const Tensor& x, const Tensor& y) { return remainder(x, y, site); });
}

// torch.div with rounding_mode "floor" (Python's //, exact: (a - fmod(a, b)) / b moved down) or
// "trunc" (trunc(a / b)). int64 stays int64; floats have a zero gradient (PyTorch's).
namespace {
Tensor rounded_div(const char* op, XOp code, const Tensor& a, const Tensor& b) {
  if (const DType p = reduced_promotion(a, b); p != kBool)
    return rounded_div(op, code, a.to(p), b.to(p)).to(reduced_result(a, b));
  check_division(op, a, b);
  if (a.dtype() == kInt64) return int_division(op, code, a, b);
  Tensor y = binary_extra(op, code, a, b);
  record(op, y, {a, b}, RecordInfo().differentiable(),  // constants: differentiable as they are
         [as = a.shape(), bs = b.shape(), dt = a.dtype(), dev = a.device()](const Tensor&) {
           return std::vector<Tensor>{zeros(as, dt, dev), zeros(bs, dt, dev)};
         });
  return y;
}
XOp rounding(const std::string& mode) {
  if (mode != "floor" && mode != "trunc")
    throw Error(
        fmt::format("div: rounding_mode must be \"floor\" or \"trunc\" (div(input, "
                    "other) divides exactly), got \"{}\"",
                    mode));
  return mode == "floor" ? XOp::FloorDiv : XOp::TruncDiv;
}
}  // namespace
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode, Site site) {
  SiteScope scope(site);
  return rounded_div("div", rounding(rounding_mode), a, b);
}
Tensor div(const Tensor& a, double b, const std::string& rounding_mode, Site site) {
  SiteScope scope(site);
  const XOp code = rounding(rounding_mode);
  return with_number("div", a, b, [&](const Tensor& x, const Tensor& y) {
    return rounded_div("div", code, x, y);
  });
}
// torch.floor_divide: PyTorch 1.13 has no derivative for it; the zeros of div(…, "floor") here.
Tensor floor_divide(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  return rounded_div("floor_divide", XOp::FloorDiv, a, b);
}
Tensor floor_divide(const Tensor& a, double b, Site site) {
  SiteScope scope(site);
  return with_number("floor_divide", a, b, [](const Tensor& x, const Tensor& y) {
    return rounded_div("floor_divide", XOp::FloorDiv, x, y);
  });
}

// |input| with the sign bit of other. d/dinput = sign(input)·(±1) (0 at input = 0), d/dother = 0.
Tensor copysign(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  if (const DType p = reduced_promotion(a, b); p != kBool)
    return copysign(a.to(p), b.to(p), site).to(reduced_result(a, b));
  if (is_reduced(a.dtype()))  // composed in float32 on recorded casts: rounded once
    return copysign(a.to(kFloat32), b.to(kFloat32), site).to(a.dtype());
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
  if (a.defined() && end.defined() && w.defined() && is_reduced(a.dtype()) &&
      a.dtype() == end.dtype() && a.dtype() == w.dtype())  // composed in float32, rounded once
    return lerp(a.to(kFloat32), end.to(kFloat32), w.to(kFloat32), site).to(a.dtype());
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
  if (const DType p = reduced_promotion(a, b); p != kBool)
    return logaddexp(a.to(p), b.to(p), site).to(reduced_result(a, b));
  if (is_reduced(a.dtype()))  // composed in float32 on recorded casts: rounded once
    return logaddexp(a.to(kFloat32), b.to(kFloat32), site).to(a.dtype());
  check_pair(a, b, "logaddexp");
  Tensor y;
  {
    NoGradGuard ng;
    const Tensor ad = a.detach(), bd = b.detach();
    y = add(maximum(ad, bd), log1p(exp(neg(abs(sub(ad, bd))))));
    y = where(logical_and(eq(ad, bd), isinf(ad)), ad, y);
  }
  RecordInfo info;
  Saved sa = info.save(a), sb = info.save(b);
  record("logaddexp", y, {a, b}, info.differentiable(), [sa, sb](const Tensor& g) {
    const Tensor ad = sa.get(), bd = sb.get();
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
  if (const DType p = reduced_promotion(a, b); p != kBool)
    return isclose(a.to(p), b.to(p), rtol, atol, equal_nan, site);
  if (is_reduced(a.dtype()))  // exact: float32 holds every reduced value
    return isclose(a.to(kFloat32), b.to(kFloat32), rtol, atol, equal_nan, site);
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
