// cuda/runtime.cu — device discovery and a smoke kernel (the kernels of every op arrive with the
// CUDA issue; this proves the toolchain path: nvcc, sm_90, cudart, linking into tests).
#include "cuda/runtime.cuh"

#include <cuda_runtime.h>

#include <cstdio>
#include <string>

namespace tg::cuda {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error
    return 0;
  }
  return n;
}

const char* device_name(int index) {
  static thread_local std::string name;
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, index) != cudaSuccess) return "";
  char buf[320];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d)", p.name, p.major, p.minor);
  name = buf;
  return name.c_str();
}

namespace {
__global__ void saxpy_kernel(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
}  // namespace

int saxpy_host(int n, float a, const float* xh, float* yh) {
  float *x = nullptr, *y = nullptr;
  cudaError_t e = cudaMalloc(&x, n * sizeof(float));
  if (e == cudaSuccess) e = cudaMalloc(&y, n * sizeof(float));
  if (e == cudaSuccess) e = cudaMemcpy(x, xh, n * sizeof(float), cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(y, yh, n * sizeof(float), cudaMemcpyHostToDevice);
  if (e == cudaSuccess) {
    saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaMemcpy(yh, y, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(x);
  cudaFree(y);
  return static_cast<int>(e);
}

}  // namespace tg::cuda
