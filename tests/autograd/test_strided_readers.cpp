// tests/autograd/test_strided_readers.cpp — every library reader of tensor data accepts a strided
// view (transpose, narrow, select, expand): gradcheck in both modes on view outputs and on leaf
// views, printing, to_vector, item, save_npy, the anomaly scan, set_grad + zero_grad. The nn
// readers have theirs beside their other tests: init and the optimizers (tests/nn/test_optim.cpp),
// clipping (test_schedule_clip.cpp), load_state_dict (test_module.cpp), DDP and ZeRO-1 and the
// collectives (tests/dist/test_zero_strided.cpp).
#include "tests/helpers.hpp"

#include "autograd/anomaly.hpp"
#include "autograd/io.hpp"

#include <cstdio>
#include <string>
#include <unistd.h>

using namespace tg;

namespace {
// (2, 3) float64 0..5 and its transpose (3, 2): a view with strides (1, 3).
Tensor base23() { return tensor(std::vector<double>{0, 1, 2, 3, 4, 5}, {2, 3}); }
GradcheckOptions fast() {
  GradcheckOptions o;
  o.mode = GradcheckMode::Fast;
  o.seed = 5;
  return o;
}
}  // namespace

TEST_CASE("gradcheck fast and full mode on view outputs (transpose, permute, sum keepdim)",
          "[gradcheck][views]") {
  manual_seed(1);
  Tensor x = tgt::leaf({2, 3, 4});
  const std::vector<std::pair<std::string, GradcheckFn>> fns{
      {"transpose", [](const std::vector<Tensor>& in) { return transpose(in[0], 0, -1); }},
      {"permute",
       [](const std::vector<Tensor>& in) {
         return permute(in[0], {2, 0, 1});
       }},
      {"sum keepdim", [](const std::vector<Tensor>& in) { return sum(in[0], {1}, true); }},
      {"narrow", [](const std::vector<Tensor>& in) { return narrow(in[0], 2, 1, 2); }},
  };
  for (const auto& [name, fn] : fns) {
    for (GradcheckMode m : {GradcheckMode::Fast, GradcheckMode::Full}) {
      GradcheckOptions o = fast();
      o.mode = m;
      GradcheckReport r = gradcheck(fn, {x}, o);
      INFO(name << "\n" << r.str());
      REQUIRE(r.passed);
      REQUIRE(r.inputs[0].checked);
      REQUIRE(r.inputs[0].max_abs_err < 1e-6);
    }
  }
}

TEST_CASE("gradcheck perturbs a leaf view through its strides", "[gradcheck][views]") {
  // xt = x.t() detached: a leaf with strides (1, 3). f(xt) = xt * c, so d f / d xt = c.
  Tensor xt = transpose(base23(), 0, 1).detach().requires_grad_();
  REQUIRE_FALSE(xt.is_contiguous());
  Tensor c = tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2});
  GradcheckFn f = [c](const std::vector<Tensor>& in) { return mul(mul(in[0], in[0]), c); };
  for (GradcheckMode m : {GradcheckMode::Full, GradcheckMode::Fast}) {
    GradcheckOptions o = fast();
    o.mode = m;
    GradcheckReport r = gradcheck(f, {xt}, o);
    INFO(r.str());
    REQUIRE(r.passed);
  }
  // The input's values are restored exactly, in the view's order.
  REQUIRE(xt.to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});
  // A wrong analytical gradient on a strided leaf still fails (the perturbation hits the element
  // the Jacobian column names).
  GradcheckFn wrong = [](const std::vector<Tensor>& in) {
    return add(in[0].detach(), mul(in[0], scalar_tensor(0.0, kFloat64)));
  };
  REQUIRE_FALSE(gradcheck(wrong, {xt}).passed);
  // An expanded leaf (stride 0) would move several entries per perturbation: refused.
  Tensor ex = expand(tensor(std::vector<double>{1, 2}, {2, 1}), {2, 3}).detach().requires_grad_();
  REQUIRE_ERROR(gradcheck([](const std::vector<Tensor>& in) { return mul(in[0], in[0]); }, {ex}),
                "gradcheck: input 0 (2,3) has overlapping elements (stride 0 in dim 1)");
}

TEST_CASE("printing, to_vector, item, save_npy and the anomaly scan read views in order",
          "[views]") {
  Tensor t = transpose(base23(), 0, 1);  // [[0, 3], [1, 4], [2, 5]]
  Tensor n = narrow(base23(), 1, 1, 2);  // [[1, 2], [4, 5]], strides (3, 1) offset 1
  REQUIRE(t.to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});
  REQUIRE(n.to_vector<float>() == std::vector<float>{1, 2, 4, 5});
  REQUIRE(select(select(t, 0, 2), 0, 1).item<double>() == 5);
  REQUIRE(select(select(n, 0, 1), 0, 0).item<int64_t>() == 4);
  REQUIRE(t.str() ==
          "tensor([[0., 3.],\n        [1., 4.],\n        [2., 5.]], shape=(3,2), "
          "dtype=float64)");
  const std::string path = fmt::format("/tmp/tg_strided_{}.npy", ::getpid());
  save_npy(path, n);
  REQUIRE(load_npy(path).to_vector<double>() == std::vector<double>{1, 2, 4, 5});
  std::remove(path.c_str());
  Tensor b = base23();
  b.data<double>()[4] = NAN;  // element (1, 1): index 3 of the transpose, 2 of the narrow
  REQUIRE(first_nonfinite(transpose(b, 0, 1)) == 3);
  REQUIRE(first_nonfinite(narrow(b, 1, 1, 2)) == 2);
}

TEST_CASE("set_grad with a strided view: zero_grad clears exactly the gradient", "[views]") {
  Tensor x = zeros({3, 2}, kFloat64).requires_grad_();
  Tensor storage = base23();  // the view's storage: zero_grad must not write the other columns
  x.set_grad(transpose(storage, 0, 1));
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});
  x.zero_grad();
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>(6, 0.0));
  Tensor y = zeros({2, 2}, kFloat64).requires_grad_();
  y.set_grad(narrow(storage, 1, 1, 2));
  y.zero_grad();
  REQUIRE(y.grad().to_vector<double>() == std::vector<double>(4, 0.0));
  // The gradient is the caller's values, not its memory: the caller's tensor is unchanged.
  REQUIRE(storage.to_vector<double>() == std::vector<double>{0, 1, 2, 3, 4, 5});
}
