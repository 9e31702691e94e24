// cuda/runtime.cuh — the plain C++ face of the CUDA runtime for the rest of tapegrad: no CUDA or
// library headers, only ints and pointers, so any translation unit can include it.
#pragma once

namespace tg::cuda {

// Number of usable CUDA devices; 0 when there is no GPU or no driver (cudaGetDeviceCount's
// errors, such as 35 "driver too old / no device", are reported as 0).
int device_count();
// Name and compute capability of device `index`, e.g. "NVIDIA H200 (sm_90)"; empty if none.
const char* device_name(int index);

// Smoke kernel: y[i] = a * x[i] + y[i] on device memory; returns 0 on success, else the CUDA error.
int saxpy_host(int n, float a, const float* x_host, float* y_host);

}  // namespace tg::cuda
