// tests/cuda/test_cuda.cpp — the CUDA toolchain path: runs a saxpy kernel on the GPU and checks it
// against the CPU. Exits 77 (ctest: skipped) on a machine without a GPU.
#include "cuda/runtime.cuh"

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  int n = tg::cuda::device_count();
  if (n == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  std::printf("device 0: %s\n", tg::cuda::device_name(0));
  const int len = 1000;
  std::vector<float> x(len), y(len), want(len);
  for (int i = 0; i < len; ++i) {
    x[i] = 0.5f * i;
    y[i] = 1.0f - i;
    want[i] = 2.0f * x[i] + y[i];
  }
  int err = tg::cuda::saxpy_host(len, 2.0f, x.data(), y.data());
  if (err != 0) {
    std::printf("saxpy failed with CUDA error %d\n", err);
    return 1;
  }
  for (int i = 0; i < len; ++i)
    if (std::fabs(y[i] - want[i]) > 1e-5f) {
      std::printf("mismatch at %d: %f vs %f\n", i, y[i], want[i]);
      return 1;
    }
  std::printf("saxpy matches the CPU on %d elements\n", len);
  return 0;
}
