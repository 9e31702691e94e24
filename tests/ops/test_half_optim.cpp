// tests/ops/test_half_optim.cpp — the optimizer entries on bfloat16 / float16 (ops/optim/): the
// Adam step reading a reduced GRADIENT of float32 master weights and state gives exactly the
// float32 step on the gradient converted (the conversion is exact, and the step runs the same
// float32 loop on chunks), on lengths across the chunk and vector tails; Adam on all-reduced
// operands is the float32 step rounded once; the sum of squares of a reduced tensor is that of its
// float32 values; clip_grad_norm_ / clip_grad_value_ on reduced gradients work in float32 and
// round once. No fixtures: the float32 paths these are held to are checked against PyTorch in
// tests/nn.
#include "helpers.hpp"

#include "nn/clip.hpp"
#include "nn/optim.hpp"
#include "ops/optim/entries.hpp"

#include <vector>

using namespace tg;

namespace {
std::vector<float> f32(const Tensor& t) { return t.to(kFloat32).contiguous().to_vector<float>(); }

detail::AdamScalars scalars(int variant, double step) {
  const bool decoupled = variant == 1, maximize = variant == 2;
  const double wd = variant == 3 ? 0.0 : 0.1;
  return {1e-2,      0.9,     0.999, 1e-8, wd, 1 - std::pow(0.9, step), 1 - std::pow(0.999, step),
          decoupled, maximize};
}
}  // namespace

TEST_CASE("half optim: Adam with float32 master weights reads a bf16 / f16 gradient exactly") {
  manual_seed(5);
  for (DType t : {kBFloat16, kFloat16})
    for (int64_t n : {1, 15, 17, 1023, 1025, 5000})
      for (int variant = 0; variant < 4; ++variant)
        for (bool ams : {false, true}) {
          INFO(dtype_name(t) << " n " << n << " variant " << variant << " amsgrad " << ams);
          Tensor p = randn({n}), m = zeros({n}), v = zeros({n});
          Tensor vm = ams ? zeros({n}) : Tensor();
          Tensor p2 = p.clone(), m2 = m.clone(), v2 = v.clone();
          Tensor vm2 = ams ? vm.clone() : Tensor();
          for (int step = 1; step <= 3; ++step) {
            const Tensor g = randn({n}).to(t);
            detail::adam_step_("Adam", p, g, m, v, vm, scalars(variant, step));
            detail::adam_step_("Adam", p2, g.to(kFloat32), m2, v2, vm2, scalars(variant, step));
          }
          REQUIRE(f32(p) == f32(p2));
          REQUIRE(f32(m) == f32(m2));
          REQUIRE(f32(v) == f32(v2));
          if (ams) REQUIRE(f32(vm) == f32(vm2));
        }
}

TEST_CASE("half optim: AdamW on bf16 / f16 parameters is the float32 step rounded once") {
  manual_seed(6);
  for (DType t : {kBFloat16, kFloat16})
    for (int64_t n : {1, 17, 1025, 3000}) {
      INFO(dtype_name(t) << " n " << n);
      const Tensor p0 = randn({n}).to(t), g0 = randn({n}).to(t);
      Tensor p = p0.clone().requires_grad_(), q = p0.to(kFloat32).requires_grad_();
      p.set_grad(g0);
      q.set_grad(g0.to(kFloat32));
      nn::AdamW a({p}, nn::AdamWOptions(1e-2)), b({q}, nn::AdamWOptions(1e-2));
      a.step();
      b.step();
      REQUIRE(p.dtype() == t);
      REQUIRE(f32(p) == f32(q.to(t)));
    }
}

TEST_CASE("half optim: sum of squares, clip_grad_norm_ and clip_grad_value_ on bf16 / f16 grads") {
  manual_seed(8);
  for (DType t : {kBFloat16, kFloat16}) {
    INFO(dtype_name(t));
    const Tensor g = (randn({1031}) * 3).to(t);
    REQUIRE(detail::sum_squares("test", g).item<double>() ==
            detail::sum_squares("test", g.to(kFloat32)).item<double>());
    Tensor p = zeros({1031}).to(t).requires_grad_(), q = zeros({1031}).requires_grad_();
    p.set_grad(g);
    q.set_grad(g.to(kFloat32));
    const double tp = nn::clip_grad_norm_({p}, 1.0), tq = nn::clip_grad_norm_({q}, 1.0);
    REQUIRE(tp == tq);
    REQUIRE(p.grad().dtype() == t);
    REQUIRE(f32(p.grad()) == f32(q.grad().to(t)));  // scaled in float32, rounded once
    p.set_grad(g);
    q.set_grad(g.to(kFloat32));
    nn::clip_grad_value_({p}, 0.3);
    nn::clip_grad_value_({q}, 0.3);
    REQUIRE(f32(p.grad()) == f32(q.grad().to(t)));
  }
}

TEST_CASE("half optim: SGD refuses reduced parameters and names the way out") {
  Tensor p = zeros({3}).to(kBFloat16).requires_grad_();
  p.set_grad(ones({3}).to(kBFloat16));
  nn::SGD opt({p}, nn::SGDOptions{});
  REQUIRE_ERROR(opt.step(), "keep float32 master weights");
}
