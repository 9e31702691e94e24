// cuda/check.cuh — for .cu files only: the check macros every CUDA and cuBLAS call goes through,
// launch-size helpers (grid_for, blocks_for), the scoped DeviceBuffer and the dtype switch. A
// failure throws tg::cuda::Error naming the op (OpScope), the call, the file and the line.
#pragma once

#include "cuda/half.cuh"
#include "cuda/kernels.cuh"
#include "cuda/runtime.cuh"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tg::cuda::detail {

[[noreturn]] void throw_cuda(cudaError_t e, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t s, const char* call, const char* file, int line);
cublasHandle_t cublas_handle();  // one per device, bound to stream()
inline cudaStream_t cur_stream() { return static_cast<cudaStream_t>(stream()); }

// Blocks of `threads` covering n items (at least 1, at most 2^31-1 in x).
inline unsigned grid_for(int64_t n, int threads) {
  int64_t g = (n + threads - 1) / threads;
  if (g < 1) g = 1;
  if (g > 0x7fffffff) g = 0x7fffffff;
  return static_cast<unsigned>(g);
}

// The block size of the element-wise and copy kernels, and their grid cap: they grid-stride
// beyond kMaxGridBlocks blocks.
constexpr int kBlockThreads = 256;
constexpr unsigned kMaxGridBlocks = 8192;
// Blocks of `per_block` items covering n, at most max_blocks (the kernel grid-strides beyond).
inline unsigned blocks_for(int64_t n, int per_block = kBlockThreads,
                           unsigned max_blocks = kMaxGridBlocks) {
  const unsigned g = grid_for(n, per_block);
  return g < max_blocks ? g : max_blocks;
}

// Device memory from the caching allocator, freed (stream-ordered) when the scope ends.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes)
      : dev_(::tg::cuda::current_device()), p_(bytes ? ::tg::cuda::alloc(bytes, dev_) : nullptr) {}
  ~DeviceBuffer() {
    try {
      if (p_) ::tg::cuda::free(p_, dev_);
    } catch (...) {  // a destructor must not throw; the block is lost at worst
    }
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  int dev_;
  void* p_;
};

}  // namespace tg::cuda::detail

// Checks a cudaError_t-returning call.
#define TG_CUDA_CHECK(call)                                                                     \
  do {                                                                                          \
    cudaError_t tg_e_ = (call);                                                                 \
    if (tg_e_ != cudaSuccess) ::tg::cuda::detail::throw_cuda(tg_e_, #call, __FILE__, __LINE__); \
  } while (0)
// Checks a cublasStatus_t-returning call.
#define TG_CUBLAS_CHECK(call)                                             \
  do {                                                                    \
    cublasStatus_t tg_s_ = (call);                                        \
    if (tg_s_ != CUBLAS_STATUS_SUCCESS)                                   \
      ::tg::cuda::detail::throw_cublas(tg_s_, #call, __FILE__, __LINE__); \
  } while (0)
// After a <<<...>>> launch: reports a bad configuration or an earlier asynchronous fault.
#define TG_CUDA_LAUNCH_CHECK(kernel_name) \
  ::tg::cuda::detail::check_launch(kernel_name, __FILE__, __LINE__)

namespace tg::cuda::detail {
inline void check_launch(const char* kernel, const char* file, int line) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw_cuda(e, kernel, file, line);
}
}  // namespace tg::cuda::detail

// The dtype switches: body() with `scalar_t` the element type of dt. One case of them:
#define TG_DISPATCH_CASE(code, type, ...) \
  case ::tg::cuda::DT::code: {            \
    using scalar_t = type;                \
    __VA_ARGS__();                        \
    break;                                \
  }
#define TG_DISPATCH_UNSUPPORTED(name) \
  default:                            \
    throw ::tg::cuda::Error(std::string(name) + ": unsupported dtype on cuda")
// float or double (F32/F64); other dtypes throw.
#define TG_DISPATCH_FLOAT(dt, name, ...)         \
  do {                                           \
    switch (dt) {                                \
      TG_DISPATCH_CASE(F32, float, __VA_ARGS__)  \
      TG_DISPATCH_CASE(F64, double, __VA_ARGS__) \
      TG_DISPATCH_UNSUPPORTED(name);             \
    }                                            \
  } while (0)
// float, double, bf16 or f16 (cuda/half.cuh: F32/F64/BF16/F16); other dtypes throw.
#define TG_DISPATCH_FLOATING(dt, name, ...)                 \
  do {                                                      \
    switch (dt) {                                           \
      TG_DISPATCH_CASE(F32, float, __VA_ARGS__)             \
      TG_DISPATCH_CASE(F64, double, __VA_ARGS__)            \
      TG_DISPATCH_CASE(BF16, ::tg::cuda::bf16, __VA_ARGS__) \
      TG_DISPATCH_CASE(F16, ::tg::cuda::f16, __VA_ARGS__)   \
      TG_DISPATCH_UNSUPPORTED(name);                        \
    }                                                       \
  } while (0)
// Any dtype: float, double, int64_t, bool, bf16, f16.
#define TG_DISPATCH_ALL(dt, name, ...)                      \
  do {                                                      \
    switch (dt) {                                           \
      TG_DISPATCH_CASE(F32, float, __VA_ARGS__)             \
      TG_DISPATCH_CASE(F64, double, __VA_ARGS__)            \
      TG_DISPATCH_CASE(I64, int64_t, __VA_ARGS__)           \
      TG_DISPATCH_CASE(BF16, ::tg::cuda::bf16, __VA_ARGS__) \
      TG_DISPATCH_CASE(F16, ::tg::cuda::f16, __VA_ARGS__)   \
      TG_DISPATCH_CASE(Bool, bool, __VA_ARGS__)             \
      TG_DISPATCH_UNSUPPORTED(name);                        \
    }                                                       \
  } while (0)
