// ops/binary/where.cpp — masked_fill and where, forward and backward side by side.
//
// Mask convention: a mask is a bool tensor, true = "selected". masked_fill writes `value` where
// the mask is true (the mask broadcasts to x, the output has x's shape); where(cond, a, b) takes
// a where cond is true and b elsewhere, all three broadcasting to one output shape. Gradients flow
// only through the elements that were taken and are summed back to each input's shape (sum_to).
// Deliberately not here: the comparisons that make masks (eq, lt, ...: elementwise.cpp).
#include "ops/binary/extra_op.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/ops.hpp"

namespace tg {
using namespace detail;

namespace {

void check_mask(const Tensor& m, const char* op, const char* arg, const Tensor& x) {
  check_defined(m, op, arg);
  check_same_device(x, m, op, "input", arg);
  if (m.dtype() != kBool)
    throw Error(fmt::format("{}: {} {} has dtype {}, expected bool (input is {})", op, arg,
                            shape_str(m.shape()), dtype_name(m.dtype()), shape_str(x.shape())));
}

// out (os) = cond ? a : b, all three broadcast to os, on the device of a (cpu::where or
// cuda::where). A 0-dim a or b on the CPU may stand for a scalar on either device.
Tensor where_kernel(const char* op, const Tensor& cond, const Tensor& a, const Tensor& b,
                    const Shape& os) {
  Tensor out = Tensor::empty(os, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  if (on_cuda(a)) {
    kern::Strided st = make_strided(os, {&a.shape(), &b.shape()});
    const Shape sc = broadcast_strides(cond.shape(), os);
    kernels(op, a.device())
        .where(cdt(a.dtype()), out.data_ptr(), static_cast<const bool*>(cond.data_ptr()), sc.data(),
               0, a.data_ptr(), b.data_ptr(), st);
    return out;
  }
  if (is_reduced(a.dtype())) {  // bfloat16 / float16: a select moves bits, nothing rounds
    cpu::where<uint16_t>(static_cast<uint16_t*>(out.data_ptr()), cond.data<bool>(),
                         static_cast<const uint16_t*>(a.data_ptr()),
                         static_cast<const uint16_t*>(b.data_ptr()), os, cond.shape(), a.shape(),
                         b.shape());
    return out;
  }
  dispatch_all(a.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    cpu::where<T>(out.data<T>(), cond.data<bool>(), a.data<T>(), b.data<T>(), os, cond.shape(),
                  a.shape(), b.shape());
  });
  return out;
}

// g with zeros where `mask` (broadcast to g's shape) is `zero_where`; the rest copied.
Tensor mask_grad(const Tensor& g, const Tensor& mask, bool zero_where) {
  Tensor z = zeros({}, g.dtype(), g.device());
  if (creating_graph())  // recorded: linear in g, the mask a constant
    return zero_where ? where(mask, z, g) : where(mask, g, z);
  return zero_where ? where_kernel("backward", mask, z, g, g.shape())
                    : where_kernel("backward", mask, g, z, g.shape());
}

}  // namespace

// ---- masked_fill: out = mask ? value : x ----
Tensor masked_fill(const Tensor& x_in, const Tensor& mask_in, double value, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  const Tensor mask = contig(mask_in);
  constexpr const char* op = "masked_fill";
  check_defined(x, op, "input");
  check_mask(mask, op, "mask", x);
  if (x.dtype() == kBool)
    throw Error(fmt::format("{}: input {} has dtype bool, expected float32, float64 or int64", op,
                            shape_str(x.shape())));
  bool ok = mask.dim() <= x.dim();
  for (int64_t i = 1; ok && i <= mask.dim(); ++i) {
    const int64_t m = mask.shape()[mask.dim() - i];
    ok = m == 1 || m == x.shape()[x.dim() - i];
  }
  if (!ok)
    throw Error(fmt::format("{}: mask {} does not broadcast to input {}", op,
                            shape_str(mask.shape()), shape_str(x.shape())));
  Tensor out = where_kernel(op, mask, full({}, value, x.dtype(), x.device()), x, x.shape());
  if (needs_record({&x})) {
    RecordInfo info =
        RecordInfo().flops(static_cast<double>(out.numel()), static_cast<double>(out.numel()));
    Saved sm = info.save(mask);  // the mask: gradient is zero where it is true
    record(op, out, {x}, info.differentiable(),
           [sm](const Tensor& g) -> std::vector<Tensor> { return {mask_grad(g, sm.get(), true)}; });
  }
  return out;
}

Tensor Tensor::masked_fill(const Tensor& mask, double value, Site site) const {
  return tg::masked_fill(*this, mask, value, site);
}

// ---- where: out = cond ? a : b, all three broadcasting ----
Tensor where(const Tensor& cond_in, const Tensor& a_in, const Tensor& b_in, Site site) {
  SiteScope scope(site);
  if (const DType p = reduced_promotion(a_in, b_in); p != kBool)  // PyTorch's promotion
    return where(cond_in, a_in.to(p), b_in.to(p), site).to(reduced_result(a_in, b_in));
  const Tensor cond = contig(cond_in);
  const Tensor a = contig(a_in);
  const Tensor b = contig(b_in);
  constexpr const char* op = "where";
  check_defined(a, op, "self");
  check_defined(b, op, "other");
  check_same_device(a, b, op, "self", "other");
  check_mask(cond, op, "condition", a);
  check_same_dtype(a, b, op, "self", "other");
  Shape ab = broadcast_shapes(a.shape(), b.shape(), op);
  Shape os;
  try {
    os = broadcast_shapes(cond.shape(), ab, op);
  } catch (const Error&) {
    throw Error(fmt::format("{}: condition {}, self {} and other {} cannot be broadcast together",
                            op, shape_str(cond.shape()), shape_str(a.shape()),
                            shape_str(b.shape())));
  }
  Tensor out = where_kernel(op, cond, a, b, os);
  if (needs_record({&a, &b})) {
    Shape sa = a.shape(), sb = b.shape();
    bool ga = a.requires_grad(), gb = b.requires_grad();
    RecordInfo info = RecordInfo().flops(static_cast<double>(out.numel()),
                                         static_cast<double>(out.numel()) * (ga + gb));
    Saved sc = info.save(cond);  // the condition: a gets g where true, b where false
    record(op, out, {a, b}, info.differentiable(),
           [sc, sa, sb, ga, gb](const Tensor& g) -> std::vector<Tensor> {
             const Tensor sc_mask = sc.get();
             Tensor da = ga ? sum_to(mask_grad(g, sc_mask, false), sa) : Tensor();
             Tensor db = gb ? sum_to(mask_grad(g, sc_mask, true), sb) : Tensor();
             return {da, db};
           });
  }
  return out;
}

}  // namespace tg
