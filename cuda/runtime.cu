// cuda/runtime.cu — device discovery, the op name for error messages, one stream and one cuBLAS
// handle per device, the caching allocator, copies and the check-macro back ends. The kernels of
// the ops live in their own files (elementwise.cu, reduce.cu, ...); cuBLAS GEMM in blas.cu.
#include "cuda/check.cuh"

#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace tg::cuda {

bool built_with_cuda() { return true; }

int device_count() {
  static const int n = [] {
    int c = 0;
    if (cudaGetDeviceCount(&c) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky error
      return 0;
    }
    return c;
  }();
  return n;
}

const char* device_name(int index) {
  static thread_local std::string name;
  cudaDeviceProp p;
  if (index < 0 || index >= device_count() || cudaGetDeviceProperties(&p, index) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  char buf[320];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d)", p.name, p.major, p.minor);
  name = buf;
  return name.c_str();
}

// ---- op name ----
// In libtapegrad_cuda.so (TG_CUDA_MODULE) the op name lives in the core: cuda/module.cpp asks it.
#ifndef TG_CUDA_MODULE
namespace {
thread_local const char* g_op = nullptr;
}
const char* current_op() { return g_op ? g_op : "cuda"; }
OpScope::OpScope(const char* op) : prev_(g_op) { g_op = op; }
OpScope::~OpScope() { g_op = prev_; }
const char* unavailable_reason() { return ""; }
#endif

namespace detail {
void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so later calls start clean
  char buf[1024];
  std::snprintf(buf, sizeof buf, "%s: %s failed at %s:%d: %s: %s", current_op(), call, file, line,
                cudaGetErrorName(e), cudaGetErrorString(e));
  throw Error(buf);
}
void throw_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, "%s: %s failed at %s:%d: %s: %s", current_op(), call, file, line,
                cublasGetStatusName(s), cublasGetStatusString(s));
  throw Error(buf);
}
}  // namespace detail

// ---- devices, streams, handles ----
namespace {
constexpr int kMaxDevices = 16;
thread_local int g_device = 0;

void check_index(int index, const char* what) {
  const int n = device_count();
  if (index < 0 || index >= n) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s: cuda:%d does not exist (%d CUDA device%s visible)", what,
                  index, n, n == 1 ? "" : "s");
    throw Error(buf);
  }
}

struct PerDevice {
  std::once_flag once;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
};
PerDevice& per_device(int index) {
  static PerDevice* all = new PerDevice[kMaxDevices];  // never destroyed: outlives every tensor
  return all[index];
}
PerDevice& init_device(int index) {
  check_index(index, current_op());
  PerDevice& d = per_device(index);
  std::call_once(d.once, [&] {
    int prev = 0;
    TG_CUDA_CHECK(cudaGetDevice(&prev));
    TG_CUDA_CHECK(cudaSetDevice(index));
    TG_CUDA_CHECK(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking));
    TG_CUBLAS_CHECK(cublasCreate(&d.cublas));
    TG_CUBLAS_CHECK(cublasSetStream(d.cublas, d.stream));
    TG_CUDA_CHECK(cudaSetDevice(prev));
  });
  return d;
}
// Makes `index` current on this thread for the scope of one runtime call.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index) : prev_(g_device) {
    if (index != prev_) set_device(index);
  }
  ~DeviceGuard() {
    if (g_device != prev_) {
      g_device = prev_;
      cudaSetDevice(prev_);
    }
  }

 private:
  int prev_;
};
}  // namespace

// Called before every op's kernels: cudaSetDevice only when the thread's device changes (a new
// thread starts on device 0 in CUDA and here alike).
void set_device(int index) {
  init_device(index);
  if (index == g_device) return;
  TG_CUDA_CHECK(cudaSetDevice(index));
  g_device = index;
}
int current_device() { return g_device; }
void* stream() { return init_device(g_device).stream; }
void synchronize(int index) {
  DeviceGuard g(index);
  TG_CUDA_CHECK(cudaStreamSynchronize(init_device(index).stream));
}
namespace detail {
cublasHandle_t cublas_handle() { return init_device(g_device).cublas; }
}  // namespace detail

// ---- caching allocator ----
namespace {
size_t round_size(size_t bytes) {
  if (bytes == 0) bytes = 1;
  constexpr size_t kSmall = 512, kLarge = size_t(2) << 20, kSplit = size_t(1) << 20;
  return bytes < kSplit ? (bytes + kSmall - 1) / kSmall * kSmall
                        : (bytes + kLarge - 1) / kLarge * kLarge;
}
struct Pool {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;  // size -> block, cached
  std::unordered_map<void*, size_t> live;    // block -> size, in use
  MemoryStats stats;
  void release_cache() {
    for (auto& [size, p] : free_blocks) {
      cudaFree(p);
      stats.reserved -= size;
    }
    free_blocks.clear();
  }
};
Pool& pool(int index) {
  static Pool* pools = new Pool[kMaxDevices];
  return pools[index];
}
std::string mib(size_t b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}
}  // namespace

void* alloc(size_t bytes, int index) {
  DeviceGuard g(index);
  init_device(index);
  const size_t size = round_size(bytes);
  Pool& P = pool(index);
  std::lock_guard<std::mutex> lock(P.mu);
  // The smallest cached block that fits, and not more than twice as large for small blocks.
  auto it = P.free_blocks.lower_bound(size);
  if (it != P.free_blocks.end() &&
      (size >= (size_t(1) << 20) ? it->first < size + (size_t(32) << 20) : it->first <= 2 * size)) {
    void* p = it->second;
    const size_t have = it->first;
    P.free_blocks.erase(it);
    P.live[p] = have;
    P.stats.allocated += have;
    P.stats.peak_allocated = std::max(P.stats.peak_allocated, P.stats.allocated);
    ++P.stats.cache_hits;
    return p;
  }
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, size);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    // Give the cache back to the driver (after the stream has finished with it) and retry.
    cudaStreamSynchronize(per_device(index).stream);
    P.release_cache();
    e = cudaMalloc(&p, size);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s: out of memory on cuda:%d allocating %s (%s in use by tensors, %s reserved): "
                  "%s",
                  current_op(), index, mib(size).c_str(), mib(P.stats.allocated).c_str(),
                  mib(P.stats.reserved).c_str(), cudaGetErrorString(e));
    throw Error(buf);
  }
  ++P.stats.device_mallocs;
  P.live[p] = size;
  P.stats.allocated += size;
  P.stats.reserved += size;
  P.stats.peak_allocated = std::max(P.stats.peak_allocated, P.stats.allocated);
  P.stats.peak_reserved = std::max(P.stats.peak_reserved, P.stats.reserved);
  return p;
}

void free(void* p, int index) {
  if (!p) return;
  Pool& P = pool(index);
  std::lock_guard<std::mutex> lock(P.mu);
  auto it = P.live.find(p);
  if (it == P.live.end()) return;  // not ours: ignore rather than corrupt the pool
  // Stream-ordered reuse: the block goes back to the cache at once; any later launch that gets
  // it runs after the launches already queued on the same stream.
  P.stats.allocated -= it->second;
  P.free_blocks.emplace(it->second, p);
  P.live.erase(it);
}

MemoryStats memory_stats(int index) {
  check_index(index, "memory_stats");
  Pool& P = pool(index);
  std::lock_guard<std::mutex> lock(P.mu);
  return P.stats;
}
void reset_peak_memory(int index) {
  check_index(index, "reset_peak_memory");
  Pool& P = pool(index);
  std::lock_guard<std::mutex> lock(P.mu);
  P.stats.peak_allocated = P.stats.allocated;
  P.stats.peak_reserved = P.stats.reserved;
}
void empty_cache(int index) {
  check_index(index, "empty_cache");
  DeviceGuard g(index);
  TG_CUDA_CHECK(cudaStreamSynchronize(init_device(index).stream));
  Pool& P = pool(index);
  std::lock_guard<std::mutex> lock(P.mu);
  P.release_cache();
}

// ---- copies ----
void copy_to_device(void* dst, const void* src, size_t bytes, int index) {
  if (bytes == 0) return;
  DeviceGuard g(index);
  cudaStream_t s = init_device(index).stream;
  TG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
  // The host buffer may be pageable and reused by the caller: wait for the copy.
  TG_CUDA_CHECK(cudaStreamSynchronize(s));
}
void copy_to_host(void* dst, const void* src, size_t bytes, int index) {
  if (bytes == 0) return;
  DeviceGuard g(index);
  cudaStream_t s = init_device(index).stream;
  TG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
  TG_CUDA_CHECK(cudaStreamSynchronize(s));
}
void copy_on_device(void* dst, const void* src, size_t bytes, int index) {
  if (bytes == 0) return;
  DeviceGuard g(index);
  TG_CUDA_CHECK(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, init_device(index).stream));
}
void copy_between_devices(void* dst, int dst_index, const void* src, int src_index, size_t bytes) {
  if (bytes == 0) return;
  synchronize(src_index);
  synchronize(dst_index);
  TG_CUDA_CHECK(cudaMemcpyPeer(dst, dst_index, src, src_index, bytes));
}
void memset_zero(void* p, size_t bytes, int index) {
  if (bytes == 0) return;
  DeviceGuard g(index);
  TG_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, init_device(index).stream));
}

// ---- smoke kernel ----
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
