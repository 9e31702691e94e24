// tests/cuda/test_loader.cpp — cuda/loader.cpp in an nvcc build: the CUDA module
// (libtapegrad_cuda.so) is dlopen'ed on the first CUDA call and never before. Modes (argv[1]):
//   cpu      CPU training work maps no CUDA library; the first CUDA query then loads the module,
//            and an error thrown inside the module reaches the core as tg::cuda::Error naming the
//            core's current op.
//   missing  run with TG_CUDA_LIBRARY pointing nowhere: no devices, and every CUDA use is a clear
//            error naming the path tried.
#include <cstdio>
#include <fstream>
#include <string>

#include "cuda/kernels.cuh"
#include "cuda/runtime.cuh"
#include "tapegrad.hpp"

namespace {
int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++failures;
}
bool mapped(const std::string& lib) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(lib) != std::string::npos) return true;
  return false;
}
bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

int cpu_mode() {
  tg::manual_seed(0);
  tg::nn::Linear lin(4, 3);
  tg::Tensor x = tg::randn({2, 4}, tg::kFloat64);
  tg::Tensor loss = tg::sum(tg::relu(lin.forward(x.to(tg::kFloat32))));
  loss.backward();
  check(lin.weight.grad().defined(), "a CPU forward/backward ran");
  check(!mapped("libcudart"), "CPU work maps no libcudart");
  check(!mapped("libcublas"), "CPU work maps no libcublas");
  check(!mapped("libtapegrad_cuda"), "CPU work maps no libtapegrad_cuda.so");

  const int n = tg::cuda_device_count();
  check(mapped("libtapegrad_cuda"), "the first CUDA query loads libtapegrad_cuda.so");
  check(std::string(tg::cuda::unavailable_reason()).empty(), "the module loaded: no reason given");
  std::printf("devices: %d\n", n);
  try {
    tg::cuda::OpScope scope("matmul");
    double c = 0;  // gemm of an int64 tensor: refused inside the module (or no device there)
    tg::cuda::gemm(tg::cuda::DT::I64, false, false, 1, 1, 1, 1.0, &c, 1, 0, &c, 1, 0, 0.0, &c, 1, 0,
                   1);
    check(false, "gemm of int64 throws");
  } catch (const tg::cuda::Error& e) {
    std::printf("  %s\n", e.what());
    check(std::string(e.what()).rfind("matmul: ", 0) == 0,
          "an error thrown in the module is a tg::cuda::Error naming the core's op");
  }
  return failures ? 1 : 0;
}

int missing_mode() {
  check(tg::cuda_device_count() == 0, "no module: 0 devices");
  check(!tg::cuda_is_available(), "no module: cuda_is_available() is false");
  const std::string why = tg::cuda::unavailable_reason();
  std::printf("  %s\n", why.c_str());
  check(contains(why, "libtapegrad_cuda.so could not be loaded") &&
            contains(why, "/nonexistent/libtapegrad_cuda.so") && contains(why, "TG_CUDA_LIBRARY"),
        "the reason names the module, the path tried and TG_CUDA_LIBRARY");
  check(tg::cuda_unavailable_reason() == why, "tg::cuda_unavailable_reason() says the same");
  try {
    tg::ones({2}).to(tg::cuda_device(0));
    check(false, "moving a tensor to cuda:0 throws");
  } catch (const tg::Error& e) {
    std::printf("  %s\n", e.what());
    check(contains(e.what(), "cuda:0 is not available (0 CUDA devices visible; the CUDA module"),
          "moving a tensor to cuda:0: tg::Error saying why");
  }
  try {
    tg::cuda::OpScope scope("fill");
    float x = 0;
    tg::cuda::fill(tg::cuda::DT::F32, &x, 1, 1.0);
    check(false, "a kernel call throws");
  } catch (const tg::cuda::Error& e) {
    check(contains(e.what(), "fill: fill: the CUDA module"), "a kernel call names op and call");
  }
  tg::cuda::free(nullptr, 0);  // nothing to free: no throw
  check(!mapped("libcudart"), "no module: no libcudart mapped");
  return failures ? 1 : 0;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "cpu") return cpu_mode();
  if (mode == "missing") return missing_mode();
  std::fprintf(stderr, "usage: test_cuda_loader cpu|missing\n");
  return 2;
}
