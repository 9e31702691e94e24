// cuda/runtime.cuh — the plain C++ face of the CUDA runtime for the rest of tapegrad: device
// discovery, the caching allocator, host/device copies, the one stream per device and the error
// type. No CUDA or library headers, only ints and pointers, so any translation unit can include
// it. Without the CUDA toolkit, cuda/stub.cpp implements the same functions: device_count() is 0
// and everything that needs a GPU throws tg::cuda::Error saying the build has no CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tg::cuda {

// Every CUDA failure: "<op>: <call> failed at <file>:<line>: <CUDA error name>: <message>".
// ops/ turns it into tg::Error (same message) for the user.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// True when this build contains the CUDA kernels (nvcc was found at configure time).
bool built_with_cuda();
// Why CUDA cannot be used at all, for error messages: "this build has no CUDA", or why the CUDA
// module (libtapegrad_cuda.so, cuda/loader.cpp) did not load; "" when the kernels are there
// (device_count() may still be 0: no GPU or no driver).
const char* unavailable_reason();
// Number of usable CUDA devices; 0 when there is no GPU, no driver or no CUDA in the build
// (cudaGetDeviceCount's errors, such as 35 "driver too old / no device", are reported as 0).
int device_count();
// Name and compute capability of device `index`, e.g. "NVIDIA H200 (sm_90)"; empty if none.
const char* device_name(int index);

// The op that CUDA error messages name: set by ops/ around its calls (thread-local).
const char* current_op();
class OpScope {
 public:
  explicit OpScope(const char* op);
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  const char* prev_;
};

// Makes `index` the current device of this thread (every kernel launches there).
void set_device(int index);
int current_device();
// The one stream of the current device (a cudaStream_t, opaque here). All kernels, copies and
// cuBLAS calls go to it, so work on one device runs in issue order.
void* stream();
// Waits until every launch on the device's stream has finished (and reports its errors).
void synchronize(int index);

// ---- caching allocator ----
// Blocks are rounded up (512 B below 1 MiB, 2 MiB above) and kept in per-device free lists when
// freed; a request reuses the smallest cached block that fits (up to 2x its size for small
// blocks), so a training loop stops calling cudaMalloc after its first step. When cudaMalloc
// fails, the cache is released and the call retried once. Freeing is stream-ordered: the one
// stream per device means a block freed after a launch is only reused by later launches.
void* alloc(size_t bytes,
            int index);  // throws Error (naming the size and usage) when out of memory
void free(void* p, int index);
struct MemoryStats {
  size_t allocated = 0;       // bytes in live tensors' blocks (rounded sizes)
  size_t peak_allocated = 0;  // high-water mark of `allocated` since start or reset_peak
  size_t reserved = 0;        // allocated + cached: what cudaMalloc holds
  size_t peak_reserved = 0;
  int64_t device_mallocs = 0;  // cudaMalloc calls so far
  int64_t cache_hits = 0;      // requests served from the cache
};
MemoryStats memory_stats(int index);
void reset_peak_memory(int index);
// Returns every cached (unused) block to the driver.
void empty_cache(int index);

// ---- copies (bytes; p_dev on device `index`) ----
// Host -> device: the host buffer may be reused as soon as the call returns.
void copy_to_device(void* dst_dev, const void* src_host, size_t bytes, int index);
// Device -> host: waits for every earlier launch on the stream (item(), printing, .cpu()).
void copy_to_host(void* dst_host, const void* src_dev, size_t bytes, int index);
// Device -> device on one device, stream-ordered.
void copy_on_device(void* dst_dev, const void* src_dev, size_t bytes, int index);
// Device -> device across devices (peer copy), synchronous.
void copy_between_devices(void* dst_dev, int dst_index, const void* src_dev, int src_index,
                          size_t bytes);
void memset_zero(void* p_dev, size_t bytes, int index);

// Smoke kernel: y[i] = a * x[i] + y[i] through device memory; returns 0 on success, else the CUDA
// error code.
int saxpy_host(int n, float a, const float* x_host, float* y_host);

}  // namespace tg::cuda
