// tests/cuda/test_nn_entries.cpp — the tensor-level entries nn/ reaches the kernels through
// (ops/optim/entries.hpp) on a GPU against the CPU: the sum of squares of a strided gradient,
// flat copies and zero fills through strided views, the Adam step on tensors (the optimizers'
// own parity is in test_device.cpp).
#include <catch2/catch.hpp>

#include "ops/ops.hpp"
#include "ops/optim/entries.hpp"

#include <vector>

using namespace tg;

TEST_CASE("cuda entries: sum_squares, copy_elems_ and zero_elems_ match the CPU") {
  manual_seed(5);
  for (DType dt : {kFloat32, kFloat64}) {
    INFO(dtype_name(dt));
    const Tensor x = randn({37, 19}, dt).t();
    const double cpu = detail::sum_squares("clip_grad_norm_", x).item<double>();
    const Tensor sg = detail::sum_squares("clip_grad_norm_", x.cuda());
    CHECK(sg.device() == cuda_device(0));
    CHECK(sg.item<double>() == Approx(cpu).epsilon(1e-12));
    auto flat = [&](Device dev) {
      const Tensor dst = zeros({9, 8}, dt, dev).t(), src = x.to(dev);
      detail::copy_elems_("dist copy", dst, 5, src, 11, 40);
      detail::zero_elems_("dist zeros", dst, 20, 7);
      return dst.cpu().contiguous().to(kFloat64).to_vector<double>();
    };
    CHECK(flat(kCPU) == flat(cuda_device()));
  }
}

TEST_CASE("cuda entries: adam_step_ on tensors matches the CPU") {
  manual_seed(6);
  const detail::AdamScalars s{1e-2, 0.9, 0.99, 1e-8, 0.1, 1 - 0.9, 1 - 0.99, true, false};
  const std::vector<Tensor> init = {randn({130}, kFloat64), randn({130}, kFloat64),
                                    randn({130}, kFloat64), abs(randn({130}, kFloat64)),
                                    abs(randn({130}, kFloat64))};
  auto run = [&](Device dev) {
    std::vector<Tensor> t;
    for (const Tensor& i : init) t.push_back(i.to(dev).contiguous().clone());
    detail::adam_step_("AdamW", t[0], t[1], t[2], t[3], t[4], s);
    return t[0].cpu().to_vector<double>();
  };
  const std::vector<double> cpu = run(kCPU), gpu = run(cuda_device());
  REQUIRE(cpu.size() == gpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) CHECK(gpu[i] == Approx(cpu[i]).epsilon(1e-13));
}
