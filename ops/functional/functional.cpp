// ops/functional/functional.cpp — tg::func (vjp, jvp, vhp, hvp, jacobian, hessian) and tg::gradgradcheck,
// composed from tg::grad with create_graph; they live in ops/ because they reshape, stack and cat
// gradients (autograd/ has no ops). Conventions: ops/functional/functional.hpp and autograd/gradcheck.hpp.
#include "ops/functional/functional.hpp"

#include "autograd/gradcheck.hpp"
#include "autograd/tape.hpp"
#include "ops/ops.hpp"

namespace tg {

namespace func {
namespace {
// PyTorch's grad_preprocess: a fresh leaf per input, or with create_graph the input itself when it
// already requires grad (so the results keep its history).
std::vector<Tensor> prepare(const std::vector<Tensor>& inputs, bool create_graph, const char* op) {
  std::vector<Tensor> xs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined()) throw Error(fmt::format("{}: input {} is undefined", op, i));
    if (!is_floating(x.dtype()))
      throw Error(fmt::format("{}: input {} {} has dtype {}, expected a floating dtype", op, i,
                              shape_str(x.shape()), dtype_name(x.dtype())));
    xs.push_back(create_graph && x.requires_grad() ? x : x.detach().requires_grad_());
  }
  return xs;
}
// Gradients with zeros for the unused inputs, detached unless create_graph.
std::vector<Tensor> finish(std::vector<Tensor> gs, const std::vector<Tensor>& like,
                           bool create_graph) {
  for (size_t i = 0; i < gs.size(); ++i) {
    if (!gs[i].defined())
      gs[i] = zeros_like(like[i]);
    else if (!create_graph)
      gs[i] = gs[i].detach();
  }
  return gs;
}
std::vector<Tensor> grads_of(const Tensor& out, const std::vector<Tensor>& xs, const Tensor& v,
                             bool create_graph) {
  if (!out.requires_grad()) return std::vector<Tensor>(xs.size());
  GradOptions o;
  o.retain_graph = true;
  o.create_graph = create_graph;
  return grad({out}, xs, {v}, o);
}
void check_like(const char* op, const char* what, const std::vector<Tensor>& v,
                const std::vector<Tensor>& xs) {
  if (v.size() != xs.size())
    throw Error(fmt::format("{}: {} has {} tensors for {} inputs", op, what, v.size(), xs.size()));
  for (size_t i = 0; i < v.size(); ++i)
    if (!v[i].defined() || v[i].shape() != xs[i].shape() || v[i].dtype() != xs[i].dtype())
      throw Error(fmt::format("{}: {}[{}] is {} {}, expected input {}'s {} {}", op, what, i,
                              v[i].defined() ? shape_str(v[i].shape()) : "undefined",
                              v[i].defined() ? dtype_name(v[i].dtype()) : "", i,
                              shape_str(xs[i].shape()), dtype_name(xs[i].dtype())));
}
Tensor scalar_output(const char* op, const Tensor& out) {
  if (!out.defined() || out.numel() != 1)
    throw Error(fmt::format("{}: fn must return a tensor with a single element, got {}", op,
                            out.defined() ? shape_str(out.shape()) : "undefined"));
  return out;
}
Tensor run(const Fn& fn, const std::vector<Tensor>& xs, const char* op) {
  EnableGradGuard with_grad;
  Tensor out = fn(xs);
  if (!out.defined() || !is_floating(out.dtype()))
    throw Error(fmt::format("{}: fn must return a floating-point tensor", op));
  return out;
}
Tensor output(const Tensor& out, bool create_graph) { return create_graph ? out : out.detach(); }
// One-hot of element k, shaped like t.
Tensor unit(const Tensor& t, int64_t k) {
  Tensor u = zeros(t.shape(), t.dtype());
  if (t.dtype() == kFloat32)
    u.data<float>()[k] = 1;
  else
    u.data<double>()[k] = 1;
  return u.to(t.device());
}
Shape concat(const Shape& a, const Shape& b) {
  Shape s = a;
  s.insert(s.end(), b.begin(), b.end());
  return s;
}
}  // namespace

std::pair<Tensor, std::vector<Tensor>> vjp(const Fn& fn, const std::vector<Tensor>& inputs,
                                           const Tensor& v, bool create_graph) {
  const std::vector<Tensor> xs = prepare(inputs, create_graph, "vjp");
  const Tensor out = run(fn, xs, "vjp");
  if (!v.defined() && out.numel() != 1)
    throw Error(fmt::format("vjp: v is needed for an output {} with more than one element",
                            shape_str(out.shape())));
  if (v.defined() && (v.shape() != out.shape() || v.dtype() != out.dtype()))
    throw Error(fmt::format("vjp: v {} {} does not match the output {} {}", shape_str(v.shape()),
                            dtype_name(v.dtype()), shape_str(out.shape()),
                            dtype_name(out.dtype())));
  EnableGradGuard with_grad;
  return {output(out, create_graph), finish(grads_of(out, xs, v, create_graph), xs, create_graph)};
}

std::pair<Tensor, Tensor> jvp(const Fn& fn, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& v, bool create_graph) {
  const std::vector<Tensor> xs = prepare(inputs, create_graph, "jvp");
  check_like("jvp", "v", v, xs);
  const Tensor out = run(fn, xs, "jvp");
  EnableGradGuard with_grad;
  // The double-vjp trick: g = Jᵀu is linear in u, so d⟨g, v⟩/du = J·v.
  Tensor u = zeros_like(out).requires_grad_();
  const std::vector<Tensor> g = grads_of(out, xs, u, true);
  std::vector<Tensor> gs, vs;
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i].defined() && g[i].requires_grad()) gs.push_back(g[i]), vs.push_back(v[i]);
  if (gs.empty()) return {output(out, create_graph), zeros_like(out)};
  GradOptions o;
  o.create_graph = create_graph;
  Tensor r = grad(gs, {u}, vs, o)[0];
  return {output(out, create_graph), finish({r}, {out}, create_graph)[0]};
}

std::pair<Tensor, std::vector<Tensor>> vhp(const Fn& fn, const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& v, bool create_graph) {
  const std::vector<Tensor> xs = prepare(inputs, create_graph, "vhp");
  check_like("vhp", "v", v, xs);
  const Tensor out = scalar_output("vhp", run(fn, xs, "vhp"));
  EnableGradGuard with_grad;
  const std::vector<Tensor> jac = grads_of(out, xs, Tensor(), true);
  std::vector<Tensor> js, vs;
  for (size_t i = 0; i < jac.size(); ++i)
    if (jac[i].defined() && jac[i].requires_grad()) js.push_back(jac[i]), vs.push_back(v[i]);
  std::vector<Tensor> r(xs.size());
  if (!js.empty()) {
    GradOptions o;
    o.create_graph = create_graph;
    r = grad(js, xs, vs, o);
  }
  return {output(out, create_graph), finish(r, xs, create_graph)};
}

// H·v = (vᵀ·H)ᵀ: the Hessian of a twice-differentiable function is symmetric, so hvp is vhp's
// computation (PyTorch's hvp takes one more reverse pass for the same numbers; ours needs no
// third derivative through an op whose second one is a raw kernel, such as the fused attention's).
std::pair<Tensor, std::vector<Tensor>> hvp(const Fn& fn, const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& v, bool create_graph) {
  check_like("hvp", "v", v, inputs);
  try {
    return vhp(fn, inputs, v, create_graph);
  } catch (const Error& e) {
    const std::string m = e.what();
    if (m.rfind("vhp:", 0) == 0) throw Error("hvp:" + m.substr(4));  // name the caller's function
    throw;
  }
}

std::vector<Tensor> jacobian(const Fn& fn, const std::vector<Tensor>& inputs, bool create_graph) {
  const std::vector<Tensor> xs = prepare(inputs, create_graph, "jacobian");
  const Tensor out = run(fn, xs, "jacobian");
  EnableGradGuard with_grad;
  std::vector<std::vector<Tensor>> rows(xs.size());
  for (int64_t k = 0; k < out.numel(); ++k) {
    const std::vector<Tensor> g =
        finish(grads_of(out, xs, unit(out, k), create_graph), xs, create_graph);
    for (size_t i = 0; i < xs.size(); ++i) rows[i].push_back(reshape(g[i], {-1}));
  }
  std::vector<Tensor> jac;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Shape s = concat(out.shape(), xs[i].shape());
    jac.push_back(rows[i].empty() ? zeros(s, xs[i].dtype(), xs[i].device())
                                  : reshape(stack(rows[i], 0), s));
  }
  return jac;
}

std::vector<std::vector<Tensor>> hessian(const Fn& fn, const std::vector<Tensor>& inputs,
                                         bool create_graph) {
  const std::vector<Tensor> xs = prepare(inputs, create_graph, "hessian");
  const Tensor out = scalar_output("hessian", run(fn, xs, "hessian"));
  EnableGradGuard with_grad;
  const std::vector<Tensor> jac = grads_of(out, xs, Tensor(), true);
  std::vector<std::vector<Tensor>> h(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    std::vector<std::vector<Tensor>> rows(xs.size());
    const bool live = jac[i].defined() && jac[i].requires_grad();
    for (int64_t k = 0; live && k < jac[i].numel(); ++k) {
      const std::vector<Tensor> g =
          finish(grads_of(jac[i], xs, unit(jac[i], k), create_graph), xs, create_graph);
      for (size_t j = 0; j < xs.size(); ++j) rows[j].push_back(reshape(g[j], {-1}));
    }
    for (size_t j = 0; j < xs.size(); ++j) {
      const Shape s = concat(xs[i].shape(), xs[j].shape());
      h[i].push_back(rows[j].empty() ? zeros(s, xs[j].dtype(), xs[j].device())
                                     : reshape(stack(rows[j], 0), s));
    }
  }
  return h;
}
}  // namespace func

GradcheckReport gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                              const Tensor& grad_output, const GradcheckOptions& opts) {
  Tensor out;
  {
    EnableGradGuard with_grad;
    out = fn(inputs);
  }
  if (!out.defined() || out.dtype() != kFloat64)
    throw Error("gradgradcheck: the function must return a float64 tensor");
  if (!out.requires_grad()) throw Error("gradgradcheck: the output does not require grad");
  Tensor v = grad_output;
  if (!v.defined()) {  // PyTorch's random grad_outputs, seeded
    Generator gen;
    gen.set_seed(opts.seed + 1);
    v = Tensor::empty(out.shape(), kFloat64);
    for (int64_t k = 0; k < v.numel(); ++k) v.data<double>()[k] = gen.normal();
  } else if (v.shape() != out.shape() || v.dtype() != kFloat64) {
    throw Error(fmt::format("gradgradcheck: grad_output {} {} does not match the output {} float64",
                            shape_str(v.shape()), dtype_name(v.dtype()), shape_str(out.shape())));
  }
  v = v.detach().clone().requires_grad_();
  std::vector<Tensor> all = inputs;
  all.push_back(v);
  const size_t n = inputs.size();
  // The first-order gradients with respect to every input that requires grad, flattened and
  // joined, as a function of the inputs and of the output gradient v.
  auto first_order = [&fn, n](const std::vector<Tensor>& in) {
    EnableGradGuard with_grad;
    const std::vector<Tensor> xs(in.begin(), in.begin() + static_cast<int64_t>(n));
    std::vector<Tensor> diff;
    for (const Tensor& x : xs)
      if (x.defined() && x.requires_grad()) diff.push_back(x);
    const Tensor y = fn(xs);
    std::vector<Tensor> g(diff.size());
    if (y.requires_grad()) {
      GradOptions o;
      o.create_graph = true;
      g = grad({y}, diff, {in[n]}, o);
    }
    std::vector<Tensor> flat;
    for (size_t i = 0; i < diff.size(); ++i)
      flat.push_back(g[i].defined() ? reshape(g[i], {-1}) : zeros({diff[i].numel()}, kFloat64));
    return cat(flat, 0);
  };
  return gradcheck(first_order, all, opts);
}

}  // namespace tg
