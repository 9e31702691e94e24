// An outside program: one umbrella header, a forward, a backward and a gradcheck.
#include <tapegrad.hpp>

#include <cstdio>

int main() {
  tg::manual_seed(0);
  tg::Tensor w = tg::randn({3, 2}, tg::kFloat64).requires_grad_();
  tg::Tensor x = tg::randn({4, 2}, tg::kFloat64);
  tg::Tensor loss = tg::tanh(tg::linear(x, w)).sum();
  loss.backward();
  tg::GradcheckReport r = tg::gradcheck(
      [&](const std::vector<tg::Tensor>& in) { return tg::tanh(tg::linear(x, in[0])).sum(); }, {w});
  std::printf("loss %.6f grad shape %s gradcheck %s\n", loss.item<double>(),
              tg::shape_str(w.grad().shape()).c_str(), r.passed ? "passed" : "FAILED");
  return r.passed && w.grad().numel() == 6 ? 0 : 1;
}
