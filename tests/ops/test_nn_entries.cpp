// tests/ops/test_nn_entries.cpp — the tensor-level entries nn/ reaches the kernels through
// (ops/optim/entries.hpp): the Adam step gives the raw kernel's bits and refuses operands that
// do not match the parameter, the sum of squares reads any layout, the flat copies and zero fills
// count elements in row-major order through strided views. The optimizers, clipping and DDP / ZeRO
// copies built on them are tested in tests/nn.
#include "helpers.hpp"

#include "ops/core/cpu/kernels.hpp"
#include "ops/optim/entries.hpp"

#include <cstring>
#include <vector>

using namespace tg;

namespace {
detail::AdamScalars scalars(bool amsgrad_step) {
  return {1e-3, 0.9, 0.999, 1e-8, 0.01, 1 - 0.9 * 0.9, 1 - 0.999 * 0.999, amsgrad_step, false};
}
bool same_bits(const Tensor& a, const std::vector<double>& b) {
  return std::memcmp(a.data<double>(), b.data(), b.size() * sizeof(double)) == 0;
}
}  // namespace

TEST_CASE("adam_step_ on tensors gives the kernel's bits, with and without amsgrad",
          "[ops][optim]") {
  manual_seed(7);
  for (bool ams : {false, true}) {
    const Tensor p = randn({5, 7}, kFloat64), g = randn({5, 7}, kFloat64);
    const Tensor m = randn({5, 7}, kFloat64), v = abs(randn({5, 7}, kFloat64));
    const Tensor vmax = ams ? abs(randn({5, 7}, kFloat64)) : Tensor();
    std::vector<double> rp(p.data<double>(), p.data<double>() + 35), rm(m.data<double>(),
                                                                        m.data<double>() + 35);
    std::vector<double> rv(v.data<double>(), v.data<double>() + 35), rvm(35);
    if (ams) std::memcpy(rvm.data(), vmax.data<double>(), 35 * sizeof(double));
    const detail::AdamScalars s = scalars(ams);
    cpu::adam_step(kern::DT::F64, rp.data(), g.data<double>(), rm.data(), rv.data(),
                   ams ? rvm.data() : nullptr, 35, s.lr, s.beta1, s.beta2, s.eps, s.wd,
                   s.decoupled, s.maximize, s.bc1, s.bc2);
    detail::adam_step_("Adam", p, g, m, v, vmax, s);
    CHECK(same_bits(p, rp));
    CHECK(same_bits(m, rm));
    CHECK(same_bits(v, rv));
    if (ams) CHECK(same_bits(vmax, rvm));
  }
}

TEST_CASE("adam_step_ refuses operands unlike the parameter, naming the op and the shapes",
          "[ops][optim]") {
  const Tensor p = zeros({4, 3}), g = zeros({4, 3}), m = zeros({4, 3}), v = zeros({4, 3});
  const detail::AdamScalars s = scalars(false);
  REQUIRE_ERROR(detail::adam_step_("AdamW", p, g, zeros({3, 4}).t(), v, Tensor(), s),
                "AdamW: internal error: exp_avg (4,3) float32 on cpu (strided)");
  REQUIRE_ERROR(detail::adam_step_("AdamW", p, zeros({5}), m, v, Tensor(), s),
                "the gradient (5) float32 on cpu does not match the parameter (4,3) float32");
  REQUIRE_ERROR(detail::adam_step_("Adam", p, g, m, zeros({4, 3}, kFloat64), Tensor(), s),
                "Adam: internal error: exp_avg_sq (4,3) float64");
  REQUIRE_ERROR(detail::adam_step_("Adam", zeros({2}, kInt64), g, m, v, Tensor(), s),
                "Adam: parameter of dtype int64 is not floating");
}

TEST_CASE("sum_squares reads any layout and accumulates in double", "[ops][optim]") {
  const Tensor x = tensor(std::vector<float>{1, -2, 3, 0.5f, -0.25f, 4}, {2, 3}).t();
  const Tensor s = detail::sum_squares("clip_grad_norm_", x);
  CHECK(s.dtype() == kFloat64);
  CHECK(s.dim() == 0);
  CHECK(s.item<double>() == 1 + 4 + 9 + 0.25 + 0.0625 + 16);
  REQUIRE_ERROR(detail::sum_squares("clip_grad_norm_", zeros({3}, kInt64)),
                "clip_grad_norm_: sum of squares of (3) int64, expected a float tensor");
}

TEST_CASE("copy_elems_ and zero_elems_ count row-major elements through strided views",
          "[ops][optim]") {
  const Tensor src = arange(0, 6, 1, kFloat64).reshape({2, 3}).t();  // rows: 0 3 / 1 4 / 2 5
  const Tensor dst = zeros({3, 4}, kFloat64).t();                    // (4, 3), strided
  detail::copy_elems_("dist copy", dst, 2, src, 1, 4);               // dst[2..6) = 3 1 4 2
  const Tensor flat = dst.contiguous().reshape({12});
  tgt::require_close(flat, {0, 0, 3, 1, 4, 2, 0, 0, 0, 0, 0, 0}, 0, 0);
  detail::zero_elems_("dist zeros", dst, 3, 2);
  tgt::require_close(dst.contiguous().reshape({12}), {0, 0, 3, 0, 0, 2, 0, 0, 0, 0, 0, 0}, 0, 0);
  REQUIRE_ERROR(detail::copy_elems_("dist copy", dst, 10, src, 0, 3),
                "dist copy: 3 elements from float64 (3,2) cpu at 0 to float64 (4,3) cpu at 10");
  REQUIRE_ERROR(detail::zero_elems_("dist zeros", zeros({4}), 3, 2),
                "dist zeros: 2 elements at 3 of (4)");
}
