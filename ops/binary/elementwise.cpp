// ops/binary/elementwise.cpp — elementwise math with NumPy broadcasting, forward and backward side
// by side; the one generic unbroadcast (sum_to); comparisons; C++ operators and Tensor methods.
// Binary ops need both operands of one dtype (no implicit promotion: an error says so); true
// division promotes int64 to the default float dtype and pow keeps int64; add / sub / mul, neg
// and abs keep int64, wrapping on overflow, take a number as PyTorch reads a Python scalar, and
// add / mul of two bool tensors are or / and (PyTorch's rules).
#include "ops/binary/extra_op.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/widen.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/kernels.hpp"
#include "ops/ops.hpp"
#include "ops/unary/unary_op.hpp"

#include <cmath>
#include <optional>
#include <type_traits>

namespace tg {
using namespace detail;

namespace {
// Cost model of elementwise ops: one FLOP per output element forward, bwd_per_element backward
// (about one per input gradient; transcendental functions count as one).
RecordInfo elementwise_info(const Tensor& out, int bwd_per_element) {
  const double n = static_cast<double>(out.numel());
  RecordInfo info;  // returned in place (no copy of its inline saved-tensor slots)
  info.flops(n, n * bwd_per_element);
  return info;
}

// ---- binary kernels ----
// out = a op b over the broadcast shape, of dtype out_dtype (a's, or bool for comparisons):
// cpu::binary or cuda::binary.
Tensor binary_kernel(const char* op, kern::BinOp code, const Tensor& a_in, const Tensor& b_in,
                     DType out_dtype) {
  if (!on_cuda(a_in) && is_reduced(a_in.dtype())) {
    // bfloat16 / float16, the float32 kernel's bits on the same values, rounded once
    // (ops/core/cpu/reduced.hpp): operands of one shape in float32 chunks (no copies); a broadcast
    // or a comparison as the float32 walk on float32 copies of the operands, each converted at its
    // own size (not the broadcast one), so the broadcast walk stays written once.
    const bool cmp = out_dtype == kBool;
    if (!cmp && a_in.shape() == b_in.shape()) {
      Tensor ha, hb;
      const Tensor &a = dense_ref(a_in, ha), &b = dense_ref(b_in, hb);
      Tensor out = Tensor::empty(a.shape(), out_dtype);
      cpu::binary_flat_reduced(code, cdt(out_dtype), out.data_ptr(), a.data_ptr(), b.data_ptr(),
                               out.numel());
      return out;
    }
    const Tensor o = binary_kernel(op, code, widen(a_in), widen(b_in), cmp ? kBool : kFloat32);
    return cmp ? o : narrow(o, out_dtype);
  }
  Tensor ha, hb;  // the kernels read row-major operands
  const Tensor &a = dense_ref(a_in, ha), &b = dense_ref(b_in, hb);
  const Shape os = a.shape() == b.shape() ? a.shape() : broadcast_shapes(a.shape(), b.shape(), op);
  Tensor out = Tensor::empty(os, out_dtype, a.device());
  if (out.numel() == 0) return out;
  if (on_cuda(a)) {
    kern::Strided st = make_strided(os, {&a.shape(), &b.shape()});
    kernels(op, a.device())
        .binary(code, cdt(a.dtype()), cdt(out_dtype), out.data_ptr(), a.data_ptr(), b.data_ptr(),
                st);
    return out;
  }
  dispatch_all(a.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    if (out_dtype == kBool) {
      cpu::binary<T, bool>(code, out.data<bool>(), a.data<T>(), b.data<T>(), os, a.shape(),
                           b.shape());
    } else if constexpr (!std::is_same_v<T, bool>) {
      cpu::binary<T, T>(code, out.data<T>(), a.data<T>(), b.data<T>(), os, a.shape(), b.shape());
    }
  });
  return out;
}

void check_binary(const char* op, const Tensor& a, const Tensor& b, bool allow_int) {
  check_defined(a, op, "self");
  check_defined(b, op, "other");
  check_same_device(a, b, op, "self", "other");
  check_same_dtype(a, b, op, "self", "other");
  if (a.dtype() == kBool || (!allow_int && a.dtype() == kInt64))
    throw Error(fmt::format("{}: self {} and other {} have dtype {}, expected a floating dtype{}",
                            op, shape_str(a.shape()), shape_str(b.shape()), dtype_name(a.dtype()),
                            allow_int ? " or int64" : ""));
}

// ---- int64 and bool operands: PyTorch's integer arithmetic ----
bool is_integral(const Tensor& t) {
  return t.defined() && (t.dtype() == kInt64 || t.dtype() == kBool);
}
// PyTorch has no subtraction or negation of a bool tensor; its hint comes with the refusal.
void refuse_bool(const char* op, const Tensor& t, const char* arg, const char* what) {
  if (t.defined() && t.dtype() == kBool)
    throw Error(fmt::format(
        "{}: {} {} has dtype bool: {} of a bool tensor is not supported, as in PyTorch (use ~ or "
        "logical_not to invert a mask, ^ or logical_xor for a difference)",
        op, arg, shape_str(t.shape()), what));
}
// Two bool tensors: add is logical or and mul logical and, with a bool result (PyTorch's).
bool both_bool(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.dtype() == kBool && b.dtype() == kBool;
}
Tensor bool_pair(const char* op, cpu::XOp code, const Tensor& a, const Tensor& b) {
  check_operands(op, a, b);
  return binary_extra(op, code, a, b);
}
// An int64 or bool tensor a with a plain number b, as PyTorch reads a Python scalar
// (is_int_scalar, ops/binary/extra_op.hpp): a b that holds an integer is an int64 operand, so the
// result is int64 (bool promotes to it), wrapping on overflow; any other b (2.5, inf, NaN, 1e20)
// promotes a to the default float dtype. Calls on_int(a as int64, b as a 0-dim int64 tensor) or
// on_float(a in the default float dtype).
template <typename I, typename F>
Tensor with_number(const Tensor& a, double b, I on_int, F on_float) {
  if (is_int_scalar(b))
    return on_int(a.to(kInt64), int64_scalar(static_cast<int64_t>(b), a.device()));
  return on_float(a.to(get_default_dtype()));
}

}  // namespace

namespace detail {
// ---- unary kernels and unary_op (ops/unary/unary_op.hpp: shared with ops/unary/unary.cpp) ----
// out = f(x) elementwise, same dtype and device: cpu::unary or cuda::unary.
Tensor unary_forward(const char* op, UnCode code, const Tensor& x_in) {
  Tensor hx;
  const Tensor& x = dense_ref(x_in, hx);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.numel() == 0) return out;
  kernels(op, x).unary(code.op, cdt(x.dtype()), out.data_ptr(), x.data_ptr(), x.numel(), code.p0,
                       code.p1);
  return out;
}
// dx = g · f'(x) elementwise, where y = f(x) is the forward output (x, y undefined when the
// derivative does not read them).
Tensor unary_backward(UnCode code, const Tensor& g_in, const Tensor& x_in, const Tensor& y_in) {
  if (code.op == kern::UnOp::AddS) return g_in;  // d(x + c)/dx = 1: pass dout on, as add does
  Tensor hg, hx, hy;
  const Tensor &g = dense_ref(g_in, hg), &x = dense_ref(x_in, hx), &y = dense_ref(y_in, hy);
  Tensor dx = Tensor::empty(g.shape(), g.dtype(), g.device());
  if (g.numel() == 0) return dx;
  kernels("backward", g)
      .unary_backward(code.op, cdt(g.dtype()), dx.data_ptr(), g.data_ptr(), data_or_null(x),
                      data_or_null(y), g.numel(), code.p0, code.p1);
  return dx;
}
// A unary op: check → allocate + kernel → record, saving what the list says its backward reads.
Tensor unary_op(const char* op, UnCode code, const Tensor& x, std::optional<UnCode> bwd) {
  check_float(x, op, "input", true);
  Tensor out = unary_forward(op, code, x);
  if (!needs_record({&x})) return out;
  const UnCode bcode = bwd ? *bwd : code;
  if (kern::unary_info(bcode.op).grad == kern::UnGrad::kZero) {  // PyTorch's zeros_like(grad)
    record(op, out, {x}, RecordInfo().differentiable(),          // a constant: differentiable as is
           [](const Tensor& g) -> std::vector<Tensor> { return {zeros_like(g)}; });
    return out;
  }
  RecordInfo info = elementwise_info(out, 1);
  info.saves_nothing().differentiable();
  const Saved sx = kern::unary_reads_x(bcode.op) ? info.save(x) : Saved();
  const Saved sy = kern::unary_reads_y(bcode.op) ? info.save_output(out) : Saved();
  record(op, out, {x}, info, [sx, sy, bcode](const Tensor& g) -> std::vector<Tensor> {
    if (creating_graph()) return {unary_grad(bcode, g, sx.get(), sy.get())};
    return {unary_backward(bcode, g, sx.get(), sy.get())};
  });
  return out;
}
}  // namespace detail

// ---- broadcasting ----
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(fmt::format("{}: shapes {} and {} cannot be broadcast: dim {} is {} vs {}", op,
                              shape_str(a), shape_str(b),
                              static_cast<int64_t>(i) - static_cast<int64_t>(n), da, db));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  // `shape` must broadcast to g's shape.
  Shape bs = broadcast_shapes(shape, g.shape(), "sum_to");
  if (bs != g.shape())
    throw Error(fmt::format("sum_to: gradient {} cannot be summed to {}", shape_str(g.shape()),
                            shape_str(shape)));
  // Sum over the broadcast dims (leading ones and size-1 ones), then drop them: the reduction
  // kernels of either device (ops/reduce/reduce.cpp).
  const size_t lead = g.shape().size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t d = 0; d < g.shape().size(); ++d)
    if (d < lead || (shape[d - lead] == 1 && g.shape()[d] != 1))
      dims.push_back(static_cast<int64_t>(d));
  if (dims.empty()) return reshape(g, shape);
  return reshape(sum(g, dims, false), shape);
}

// ---- binary ops ----
Tensor add(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  if (const DType p = reduced_promotion(a, b); p != kBool)
    return add(a.to(p), b.to(p), site).to(reduced_result(a, b));
  if (both_bool(a, b)) return bool_pair("add", cpu::XOp::Or, a, b);
  check_binary("add", a, b, true);
  Tensor out = binary_kernel("add", kern::BinOp::Add, a, b, a.dtype());
  if (needs_record({&a, &b})) {
    Shape sa = a.shape(), sb = b.shape();
    record("add", out, {a, b},
           elementwise_info(out, a.requires_grad() + b.requires_grad())
               .saves_nothing()
               .differentiable(),
           [sa, sb](const Tensor& g) -> std::vector<Tensor> {
             return {sum_to(g, sa), sum_to(g, sb)};
           });
  }
  return out;
}
Tensor sub(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  if (const DType p = reduced_promotion(a, b); p != kBool)
    return sub(a.to(p), b.to(p), site).to(reduced_result(a, b));
  refuse_bool("sub", a, "self", "subtraction");
  refuse_bool("sub", b, "other", "subtraction");
  check_binary("sub", a, b, true);
  Tensor out = binary_kernel("sub", kern::BinOp::Sub, a, b, a.dtype());
  if (needs_record({&a, &b})) {
    Shape sa = a.shape(), sb = b.shape();
    record("sub", out, {a, b},
           elementwise_info(out, a.requires_grad() + b.requires_grad())
               .saves_nothing()
               .differentiable(),
           [sa, sb](const Tensor& g) -> std::vector<Tensor> {
             return {sum_to(g, sa), sum_to(neg(g), sb)};
           });
  }
  return out;
}
Tensor mul(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  if (const DType p = reduced_promotion(a, b); p != kBool)
    return mul(a.to(p), b.to(p), site).to(reduced_result(a, b));
  if (both_bool(a, b)) return bool_pair("mul", cpu::XOp::And, a, b);
  check_binary("mul", a, b, true);
  Tensor out = binary_kernel("mul", kern::BinOp::Mul, a, b, a.dtype());
  if (needs_record({&a, &b})) {
    bool ga = a.requires_grad(), gb = b.requires_grad();
    RecordInfo info = elementwise_info(out, ga + gb);
    Saved sa = info.save(a), sb = info.save(b);
    record("mul", out, {a, b}, info.differentiable(),
           [sa, sb, ga, gb](const Tensor& g) -> std::vector<Tensor> {
             const Tensor a = sa.get(), b = sb.get();
             auto grads = [&](const std::vector<Tensor>& v) -> std::vector<Tensor> {
               return {ga ? sum_to(mul(v[0], v[2]), a.shape()) : Tensor(),
                       gb ? sum_to(mul(v[0], v[1]), b.shape()) : Tensor()};
             };
             // a broadcast operand sums products: in float32 for reduced types, rounded once
             if (a.shape() != g.shape() || b.shape() != g.shape())
               return in_float32({g, a, b}, grads);
             return grads({g, a, b});
           });
  }
  return out;
}
namespace {
// div's gradients: g / b and -g·(out / b), each summed to its operand's shape.
std::vector<Tensor> div_grads(const Tensor& g, const Tensor& sb, const Tensor& so, const Shape& sa,
                              bool gb) {
  Tensor ga = div(g, sb);  // d(a/b)/da = 1/b
  // d(a/b)/db = -a/b² = -g·(out/b), in PyTorch's order: (0, 1e-310) gives -0, not
  // the NaN of -(g/b)·out
  Tensor db = gb ? sum_to(neg(mul(g, div(so, sb))), sb.shape()) : Tensor();
  return {sum_to(ga, sa), db};
}
}  // namespace
// True division: int64 operands divide in the default float dtype, as PyTorch's a / b.
Tensor div(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  if (const DType p = reduced_promotion(a, b); p != kBool)
    return div(a.to(p), b.to(p), site).to(reduced_result(a, b));
  check_binary("div", a, b, true);
  if (a.dtype() == kInt64) return div(a.to(get_default_dtype()), b.to(get_default_dtype()));
  Tensor out = binary_kernel("div", kern::BinOp::Div, a, b, a.dtype());
  if (needs_record({&a, &b})) {
    Shape sa = a.shape();
    bool gb = b.requires_grad();
    RecordInfo info = elementwise_info(out, 1 + 2 * gb);
    Saved hb = info.save(b), ho = info.save_output(out);
    record("div", out, {a, b}, info.differentiable(),
           [sa, hb, ho, gb](const Tensor& g_in) -> std::vector<Tensor> {
             return in_float32({g_in, hb.get(), ho.get()}, [&](const std::vector<Tensor>& v) {
               const Tensor &g = v[0], &sb = v[1], &so = v[2];
               return div_grads(g, sb, so, sa, gb);
             });
           });
  }
  return out;
}
// int64 ** int64 stays int64, wrapping on overflow; a negative exponent gives 1 / a^|b|
// truncated toward 0, as PyTorch's tensor form (ops/binary/cpu/binary.cpp's powi).
Tensor pow(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  if (const DType p = reduced_promotion(a, b); p != kBool)
    return pow(a.to(p), b.to(p), site).to(reduced_result(a, b));
  check_binary("pow", a, b, true);
  if (a.dtype() == kInt64) return binary_extra("pow", cpu::XOp::Pow, a, b);
  Tensor out = binary_kernel("pow", kern::BinOp::Pow, a, b, a.dtype());
  if (needs_record({&a, &b})) {
    bool gb = b.requires_grad();
    RecordInfo info = elementwise_info(out, 3 + 3 * gb);
    Saved ha = info.save(a), hb = info.save(b), ho = info.save_output(out);
    record("pow", out, {a, b}, info.differentiable(),
           [ha, hb, ho, gb](const Tensor& g_in) -> std::vector<Tensor> {
             return in_float32(
                 {g_in, ha.get(), hb.get(), ho.get()}, [&](const std::vector<Tensor>& v) {
                   const Tensor &g = v[0], &sa = v[1], &sb = v[2], &so = v[3];
                   // PyTorch's rules: d/da = b·a^(b-1), 0 where b == 0; d/db = out·log(a), 0 where
                   // a == 0 and b >= 0 (where out is 0 or 1 and log(a) -inf).
                   Tensor z = zeros({}, sa.dtype(), sa.device());
                   Tensor da_local = where(eq(sb, z), z, mul(sb, pow(sa, sub(sb, 1.0))));
                   Tensor da = sum_to(mul(g, da_local), sa.shape());
                   Tensor db;
                   if (gb) {
                     Tensor t = mul(so, log(sa));
                     db = sum_to(mul(g, where(eq(sa, z), where(ge(sb, z), z, t), t)), sb.shape());
                   }
                   return std::vector<Tensor>{da, db};
                 });
           });
  }
  return out;
}
namespace {
// maximum/minimum on float, int64 and bool (bool: or / and, computed on int64, as PyTorch allows
// it). The gradient goes to the selected operand, ties share it equally, and where either is NaN
// both get it (PyTorch's rule: an operand's weight is 1 - [it loses] - ½[tie]).
Tensor extremum(const char* op, const Tensor& a, const Tensor& b, bool is_max) {
  if (const DType p = reduced_promotion(a, b); p != kBool)
    return extremum(op, a.to(p), b.to(p), is_max).to(reduced_result(a, b));
  check_defined(a, op, "self");
  check_defined(b, op, "other");
  check_same_device(a, b, op, "self", "other");
  check_same_dtype(a, b, op, "self", "other");
  if (a.dtype() == kBool) return extremum(op, a.to(kInt64), b.to(kInt64), is_max).to(kBool);
  // NaN propagates (cpu/binary.cpp).
  Tensor out = binary_kernel(op, is_max ? kern::BinOp::Max : kern::BinOp::Min, a, b, a.dtype());
  if (needs_record({&a, &b})) {
    RecordInfo info = elementwise_info(out, 4);
    Saved ha = info.save(a), hb = info.save(b);
    // The weights are constants (masks of the values), so the closure is linear in g.
    record(op, out, {a, b}, info.differentiable(),
           [ha, hb, is_max](const Tensor& g) -> std::vector<Tensor> {
             const Tensor sa = ha.get(), sb = hb.get();
             const DType dt = sa.dtype();
             Tensor tie = mul(eq(sa, sb).to(dt), 0.5);
             Tensor wa = rsub(1.0, add(tie, (is_max ? lt(sa, sb) : gt(sa, sb)).to(dt)));
             Tensor wb = rsub(1.0, add(tie, (is_max ? gt(sa, sb) : lt(sa, sb)).to(dt)));
             return {sum_to(mul(g, wa), sa.shape()), sum_to(mul(g, wb), sb.shape())};
           });
  }
  return out;
}
}  // namespace
Tensor maximum(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  return extremum("maximum", a, b, true);
}
Tensor minimum(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  return extremum("minimum", a, b, false);
}

// ---- scalar forms (no broadcast tensor is made) ----
// Every unary op and its derivative: its Formula (ops/kern/unary_formulas.hpp).
// An int64 or bool tensor takes the number as PyTorch does (with_number above).
Tensor add(const Tensor& a, double b, Site site) {
  SiteScope scope(site);
  if (is_integral(a))
    return with_number(
        a, b, [](const Tensor& x, const Tensor& y) { return add(x, y); },
        [b](const Tensor& x) { return add(x, b); });
  return unary_op("add", {kern::UnOp::AddS, b}, a);
}
Tensor sub(const Tensor& a, double b, Site site) {
  SiteScope scope(site);
  refuse_bool("sub", a, "self", "subtraction");
  if (is_integral(a))
    return with_number(
        a, b, [](const Tensor& x, const Tensor& y) { return sub(x, y); },
        [b](const Tensor& x) { return sub(x, b); });
  return unary_op("sub", {kern::UnOp::AddS, -b}, a);
}
Tensor rsub(double a, const Tensor& b, Site site) {
  SiteScope scope(site);
  refuse_bool("rsub", b, "input", "subtraction");
  if (is_integral(b))
    return with_number(
        b, a, [](const Tensor& x, const Tensor& y) { return sub(y, x); },
        [a](const Tensor& x) { return rsub(a, x); });
  return unary_op("rsub", {kern::UnOp::RSubS, a}, b);
}
Tensor mul(const Tensor& a, double b, Site site) {
  SiteScope scope(site);
  if (is_integral(a))
    return with_number(
        a, b, [](const Tensor& x, const Tensor& y) { return mul(x, y); },
        [b](const Tensor& x) { return mul(x, b); });
  return unary_op("mul", {kern::UnOp::MulS, b}, a);
}
Tensor div(const Tensor& a, double b, Site site) {
  SiteScope scope(site);
  if (a.defined() && a.dtype() == kInt64) {  // a / b exactly, as PyTorch's int / number
    const DType dt = get_default_dtype();
    return div(a.to(dt), full({}, b, dt, a.device()));
  }
  return unary_op("div", {kern::UnOp::MulS, 1.0 / b}, a);
}
Tensor rdiv(double a, const Tensor& b, Site site) {  // d(a/x)/dx = -a/x² = -y/x
  SiteScope scope(site);
  return unary_op("rdiv", {kern::UnOp::RDivS, a}, b);
}
// An int64 a with an integral p stays int64 (PyTorch's int ** int) and refuses a negative p as
// PyTorch does; with any other p it promotes to the default float dtype (int ** float).
Tensor pow(const Tensor& a, double p, Site site) {
  SiteScope scope(site);
  if (a.defined() && a.dtype() == kInt64) {
    if (!is_int_scalar(p)) return pow(a.to(get_default_dtype()), p);
    if (p < 0)
      throw Error(
          fmt::format("pow: input {} is int64 and exponent {} a negative integer: Integers "
                      "to negative integer powers are not allowed (use a float input)",
                      shape_str(a.shape()), p));
    return binary_extra("pow", cpu::XOp::Pow, a, int64_scalar(static_cast<int64_t>(p), a.device()));
  }
  return unary_op("pow", {kern::UnOp::PowS, p}, a);
}

// ---- unary ops ----
// int64: 0 - a, wrapping (-INT64_MIN is INT64_MIN, as PyTorch's); bool is refused, as PyTorch.
Tensor neg(const Tensor& a, Site site) {
  SiteScope scope(site);
  refuse_bool("neg", a, "input", "negation");
  if (is_integral(a)) return sub(int64_scalar(0, a.device()), a);
  return unary_op("neg", {kern::UnOp::Neg}, a);
}
// d/dx = sign(x), 0 at 0. int64: int64, and |INT64_MIN| wraps to INT64_MIN as PyTorch's; PyTorch
// has no abs of bool.
Tensor abs(const Tensor& a, Site site) {
  SiteScope scope(site);
  if (a.defined() && a.dtype() == kBool)
    throw Error(fmt::format("abs: input {} has dtype bool, expected float32, float64 or int64",
                            shape_str(a.shape())));
  if (is_integral(a)) return where(lt(a, 0.0), neg(a), a);
  return unary_op("abs", {kern::UnOp::Abs}, a);
}
// GELU, exact (x·Φ(x)) or PyTorch's tanh approximation.
Tensor gelu(const Tensor& a, const std::string& approximate, Site site) {
  SiteScope scope(site);
  if (approximate == "none") return unary_op("gelu", {kern::UnOp::GeluErf}, a);
  if (approximate == "tanh") return unary_op("gelu_tanh", {kern::UnOp::GeluTanh}, a);
  throw Error(
      fmt::format("gelu: approximate must be \"none\" or \"tanh\", got \"{}\"", approximate));
}
// The gradient passes where lo <= x <= hi (PyTorch's convention at the boundary), so nowhere
// when lo > hi or a bound is NaN. PyTorch 1.13's values in the corner cases: min > max gives max
// everywhere (NaN stays NaN); a NaN bound of a two-sided clamp gives NaN everywhere, while
// clamp_min / clamp_max with a NaN bound leave x as it is (the Clamp kernel's comparisons are
// false for NaN).
Tensor clamp(const Tensor& a, double lo, double hi, Site site) {
  SiteScope scope(site);
  const UnCode grad{kern::UnOp::Clamp, lo, hi};
  if (std::isnan(lo) || std::isnan(hi)) return unary_op("clamp", {kern::UnOp::MulS, NAN}, a, grad);
  if (lo > hi) return unary_op("clamp", {kern::UnOp::Clamp, hi, hi}, a, grad);
  return unary_op("clamp", grad, a);
}
Tensor clamp_min(const Tensor& a, double lo, Site site) {
  SiteScope scope(site);
  return unary_op("clamp", {kern::UnOp::Clamp, lo, INFINITY}, a);
}
Tensor clamp_max(const Tensor& a, double hi, Site site) {
  SiteScope scope(site);
  return unary_op("clamp", {kern::UnOp::Clamp, -INFINITY, hi}, a);
}

// ---- comparisons ----
namespace {
Tensor compare(const char* op, kern::BinOp code, const Tensor& a, const Tensor& b) {
  if (const DType p = reduced_promotion(a, b); p != kBool)  // exact: no rounding
    return compare(op, code, a.to(p), b.to(p));
  check_defined(a, op, "self");
  check_defined(b, op, "other");
  check_same_device(a, b, op, "self", "other");
  check_same_dtype(a, b, op, "self", "other");
  return binary_kernel(op, code, a, b, kBool);
}
}  // namespace
Tensor eq(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  return compare("eq", kern::BinOp::Eq, a, b);
}
Tensor ne(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  return compare("ne", kern::BinOp::Ne, a, b);
}
Tensor lt(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  return compare("lt", kern::BinOp::Lt, a, b);
}
Tensor le(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  return compare("le", kern::BinOp::Le, a, b);
}
Tensor gt(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  return compare("gt", kern::BinOp::Gt, a, b);
}
Tensor ge(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  return compare("ge", kern::BinOp::Ge, a, b);
}
// With a plain number (x == 0, x > 0.5): the number as a 0-dim tensor of x's dtype and device; an
// int64 or bool x meets a non-integral number in float64 (PyTorch's type promotion).
namespace {
Tensor compare_scalar(const char* op, kern::BinOp code, const Tensor& a, double b) {
  check_defined(a, op, "self");
  const bool integral = a.dtype() == kInt64 || a.dtype() == kBool;
  if (integral && (b != std::floor(b) || !std::isfinite(b)))
    return compare(op, code, a.to(kFloat64), scalar_tensor(b, kFloat64, a.device()));
  if (a.dtype() == kBool && b != 0 && b != 1)  // true/false are 1/0: compare as int64
    return compare(op, code, a.to(kInt64), scalar_tensor(b, kInt64, a.device()));
  return compare(op, code, a, scalar_tensor(b, a.dtype(), a.device()));
}
}  // namespace
Tensor eq(const Tensor& a, double b, Site site) {
  SiteScope scope(site);
  return compare_scalar("eq", kern::BinOp::Eq, a, b);
}
Tensor ne(const Tensor& a, double b, Site site) {
  SiteScope scope(site);
  return compare_scalar("ne", kern::BinOp::Ne, a, b);
}
Tensor lt(const Tensor& a, double b, Site site) {
  SiteScope scope(site);
  return compare_scalar("lt", kern::BinOp::Lt, a, b);
}
Tensor le(const Tensor& a, double b, Site site) {
  SiteScope scope(site);
  return compare_scalar("le", kern::BinOp::Le, a, b);
}
Tensor gt(const Tensor& a, double b, Site site) {
  SiteScope scope(site);
  return compare_scalar("gt", kern::BinOp::Gt, a, b);
}
Tensor ge(const Tensor& a, double b, Site site) {
  SiteScope scope(site);
  return compare_scalar("ge", kern::BinOp::Ge, a, b);
}
Tensor operator==(const Tensor& a, double b) { return eq(a, b, Site()); }
Tensor operator!=(const Tensor& a, double b) { return ne(a, b, Site()); }
Tensor operator<(const Tensor& a, double b) { return lt(a, b, Site()); }
Tensor operator<=(const Tensor& a, double b) { return le(a, b, Site()); }
Tensor operator>(const Tensor& a, double b) { return gt(a, b, Site()); }
Tensor operator>=(const Tensor& a, double b) { return ge(a, b, Site()); }
Tensor operator==(double a, const Tensor& b) { return eq(b, a, Site()); }
Tensor operator!=(double a, const Tensor& b) { return ne(b, a, Site()); }
Tensor operator<(double a, const Tensor& b) { return gt(b, a, Site()); }
Tensor operator<=(double a, const Tensor& b) { return ge(b, a, Site()); }
Tensor operator>(double a, const Tensor& b) { return lt(b, a, Site()); }
Tensor operator>=(double a, const Tensor& b) { return le(b, a, Site()); }

// Any dtype, bool out: a number is true where it is not 0 (NaN is true), as in PyTorch.
Tensor logical_not(const Tensor& a_in, Site site) {
  SiteScope scope(site);
  check_defined(a_in, "logical_not", "input");
  if (a_in.dtype() != kBool) return eq(a_in, zeros({}, a_in.dtype(), a_in.device()));
  Tensor ha;
  const Tensor& a = dense_ref(a_in, ha);
  if (on_cuda(a)) {
    Tensor out = Tensor::empty(a.shape(), kBool, a.device());
    kernels("logical_not", a.device())
        .logical_not(static_cast<bool*>(out.data_ptr()), static_cast<const bool*>(a.data_ptr()),
                     a.numel());
    return out;
  }
  Tensor out = Tensor::empty(a.shape(), kBool);
  for (int64_t i = 0; i < a.numel(); ++i) out.data<bool>()[i] = !a.data<bool>()[i];
  return out;
}

// ---- operators and methods ----
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b, Site()); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b, Site()); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b, Site()); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b, Site()); }
Tensor operator+(const Tensor& a, double b) { return add(a, b, Site()); }
Tensor operator-(const Tensor& a, double b) { return sub(a, b, Site()); }
Tensor operator*(const Tensor& a, double b) { return mul(a, b, Site()); }
Tensor operator/(const Tensor& a, double b) { return div(a, b, Site()); }
Tensor operator+(double a, const Tensor& b) { return add(b, a, Site()); }
Tensor operator-(double a, const Tensor& b) { return rsub(a, b, Site()); }
Tensor operator*(double a, const Tensor& b) { return mul(b, a, Site()); }
Tensor operator/(double a, const Tensor& b) { return rdiv(a, b, Site()); }
Tensor Tensor::operator-() const { return neg(*this, Site()); }
Tensor Tensor::exp(Site site) const { return tg::exp(*this, site); }
Tensor Tensor::log(Site site) const { return tg::log(*this, site); }
Tensor Tensor::sqrt(Site site) const { return tg::sqrt(*this, site); }
Tensor Tensor::abs(Site site) const { return tg::abs(*this, site); }
Tensor Tensor::tanh(Site site) const { return tg::tanh(*this, site); }
Tensor Tensor::sigmoid(Site site) const { return tg::sigmoid(*this, site); }
Tensor Tensor::relu(Site site) const { return tg::relu(*this, site); }
Tensor Tensor::pow(double e, Site site) const { return tg::pow(*this, e, site); }

}  // namespace tg
