// examples/demo.cpp — the smallest end-to-end training run: a 2-layer MLP (1 -> 32 -> 1, tanh)
// fits y = sin(2x) on 256 seeded points with SGD + momentum, printing the falling loss.
// Usage: demo [steps]   (default 600)
#include "autograd/openmp_wait.hpp"
#include <tapegrad.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  tg::passive_openmp_wait(argv);  // idle OpenMP threads sleep (openmp_wait.hpp says why)
  const int steps = argc > 1 ? std::atoi(argv[1]) : 600;
  if (steps <= 0) {
    std::fprintf(stderr, "usage: demo [steps > 0]\n");
    return 2;
  }
  tg::manual_seed(0);

  // Data: N points x in [-2, 2), y = sin(2x). Shapes: x, y (N, 1).
  const int64_t N = 256, H = 32;
  tg::Tensor x = tg::Tensor::empty({N, 1});
  tg::Tensor y = tg::Tensor::empty({N, 1});
  for (int64_t i = 0; i < N; ++i) {
    x.data<float>()[i] = -2.0f + 4.0f * i / N;
    y.data<float>()[i] = std::sin(2.0f * x.data<float>()[i]);
  }

  // Parameters with PyTorch's Linear initialisation. W1 (H, 1), b1 (H), W2 (1, H), b2 (1).
  auto make = [](tg::Shape s, int64_t fan_in) {
    tg::Tensor t = tg::zeros(s);
    double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    tg::nn::init::uniform_(t, -bound, bound);
    return t.requires_grad_();
  };
  tg::Tensor W1 = make({H, 1}, 1), b1 = make({H}, 1), W2 = make({1, H}, H), b2 = make({1}, H);
  tg::nn::SGD opt({W1, b1, W2, b2}, {/*lr=*/0.05, /*momentum=*/0.9});

  std::printf(
      "demo: MLP 1-%lld-1 (tanh) fitting y = sin(2x) on %lld points, SGD lr 0.05 momentum 0.9\n",
      static_cast<long long>(H), static_cast<long long>(N));
  auto t0 = std::chrono::steady_clock::now();
  double first = 0, last = 0;
  for (int step = 1; step <= steps; ++step) {
    tg::Tensor h = tg::tanh(tg::linear(x, W1, b1));  // (N, H)
    tg::Tensor pred = tg::linear(h, W2, b2);         // (N, 1)
    tg::Tensor loss = ((pred - y) * (pred - y)).mean();
    opt.zero_grad();
    loss.backward();
    opt.step();
    last = loss.item<double>();
    if (step == 1) first = last;
    if (step == 1 || step % (steps / 10 > 0 ? steps / 10 : 1) == 0)
      std::printf("step %4d  loss %.6f\n", step, last);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("loss %.6f -> %.6f in %d steps (%.2f s, %.0f steps/s)\n", first, last, steps, secs,
              steps / secs);
  return last < first ? 0 : 1;
}
