// An outside program: one umbrella header, a forward, a backward, a gradcheck and the second
// order (a Hessian-vector product and gradgradcheck). With --cuda it
// then asks for CUDA devices, which loads the installed CUDA module (libtapegrad_cuda.so) in an
// nvcc build; without it the program stays CPU-only and maps no CUDA library.
#include <tapegrad.hpp>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  tg::manual_seed(0);
  tg::Tensor w = tg::randn({3, 2}, tg::kFloat64).requires_grad_();
  tg::Tensor x = tg::randn({4, 2}, tg::kFloat64);
  tg::Tensor loss = tg::tanh(tg::linear(x, w)).sum();
  loss.backward();
  tg::GradcheckReport r = tg::gradcheck(
      [&](const std::vector<tg::Tensor>& in) { return tg::tanh(tg::linear(x, in[0])).sum(); }, {w});
  auto f = [&](const std::vector<tg::Tensor>& in) { return tg::tanh(tg::linear(x, in[0])).sum(); };
  auto [value, hv] = tg::func::hvp(f, {w.detach()}, {tg::ones({3, 2}, tg::kFloat64)});
  tg::GradcheckReport r2 = tg::gradgradcheck(f, {w});
  std::printf("loss %.6f grad shape %s gradcheck %s gradgradcheck %s hvp %s kernels %s\n",
              loss.item<double>(), tg::shape_str(w.grad().shape()).c_str(),
              r.passed ? "passed" : "FAILED", r2.passed ? "passed" : "FAILED",
              tg::shape_str(hv[0].shape()).c_str(), tg::cpu::simd_kernels());
  if (argc > 1 && std::strcmp(argv[1], "--cuda") == 0)
    std::printf("cuda devices: %d\n", tg::cuda_device_count());
  return r.passed && r2.passed && w.grad().numel() == 6 && hv[0].numel() == 6 ? 0 : 1;
}
