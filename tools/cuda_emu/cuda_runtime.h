// tools/cuda_emu/cuda_runtime.h — the CUDA runtime API subset that tapegrad's cuda/*.cu use,
// emulated on the host, so the real kernels build with g++ and run without a GPU (TG_CUDA_EMU).
// One device by default ("tapegrad host emulator", reported as sm_90 with H100/H200 limits;
// TG_EMU_DEVICES=n for more), device memory from tg_emu/memory.h, kernels from tg_emu/launch.h,
// device-side intrinsics from tg_emu/device.h. Streams and events exist but every operation is
// synchronous: a launch or copy has finished when the call returns. The launch checks of the real
// runtime are made (grid and block limits, dynamic shared memory above 48 KiB only after
// cudaFuncSetAttribute, a stream of another device) and set cudaGetLastError; a copy or memset
// must stay inside one device block and match its cudaMemcpyKind.
// Deliberately not modelled: asynchrony and stream/event ordering, sticky errors (a failed
// launch reports cudaErrorLaunchFailure once and the emulator goes on), timing (events measure
// host time), texture/surface memory, graphs, cooperative launches, multi-process anything.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "tg_emu/device.h"
#include "tg_emu/launch.h"
#include "tg_emu/memory.h"

#define TG_CUDA_EMU_RUNTIME 1
#define CUDART_VERSION 12000

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidSymbol = 13,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
};
typedef cudaError_t cudaError;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};
constexpr unsigned cudaStreamDefault = 0, cudaStreamNonBlocking = 1;
constexpr unsigned cudaEventDefault = 0, cudaEventBlockingSync = 1, cudaEventDisableTiming = 2;
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  size_t sharedMemPerBlockOptin;
  size_t sharedMemPerMultiprocessor;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int major, minor;
  int multiProcessorCount;
  int maxThreadsPerMultiProcessor;
  int l2CacheSize;
  int clockRate;
  int memoryClockRate;
  int memoryBusWidth;
  int concurrentKernels;
  int unifiedAddressing;
};

namespace tg_emu {
// H100/H200 (sm_90) limits.
constexpr size_t kSmemDefault = 48 << 10, kSmemOptinMax = 227 << 10;

inline int device_count() {
  static const int n = [] {
    const char* e = std::getenv("TG_EMU_DEVICES");
    return e ? std::atoi(e) : 1;
  }();
  return n;
}
inline int& current_device() {
  thread_local int d = 0;
  return d;
}
inline cudaError_t& last_error() {
  thread_local cudaError_t e = cudaSuccess;
  return e;
}
inline cudaError_t fail(cudaError_t e, const std::string& why = "") {
  if (!why.empty()) std::fprintf(stderr, "tg_emu: %s\n", why.c_str());
  last_error() = e;
  return e;
}
inline void set_launch_error(int code) { last_error() = static_cast<cudaError_t>(code); }
// Dynamic shared memory allowed per kernel (cudaFuncSetAttribute).
inline std::map<const void*, size_t>& smem_optin() {
  static std::map<const void*, size_t> m;
  return m;
}
inline int check_launch(const char* name, const void* key, const Cfg& c) {
  const dim3 g = c.grid, b = c.block;
  const uint64_t threads = uint64_t(b.x) * b.y * b.z;
  char why[320];
  if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535 ||
      threads == 0 || threads > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64) {
    std::snprintf(why, sizeof why,
                  "kernel %s: invalid launch configuration grid (%u,%u,%u) "
                  "block (%u,%u,%u)",
                  name, g.x, g.y, g.z, b.x, b.y, b.z);
    return fail(cudaErrorInvalidConfiguration, why);
  }
  // An unknown key (a deduced template: rewrite_launches.py) can only be held to the hardware
  // limit.
  auto it = smem_optin().find(key);
  const size_t allowed = !key                       ? kSmemOptinMax
                         : it != smem_optin().end() ? it->second
                                                    : kSmemDefault;
  if (c.smem > allowed) {
    std::snprintf(why, sizeof why,
                  "kernel %s: %zu bytes of dynamic shared memory, %zu allowed "
                  "(above 48 KiB needs cudaFuncSetAttribute(MaxDynamicSharedMemorySize))",
                  name, c.smem, allowed);
    return fail(cudaErrorInvalidValue, why);
  }
  const cudaStream_t s = c.stream;
  if (s && s != cudaStreamLegacy && s != cudaStreamPerThread && s->device != current_device()) {
    std::snprintf(why, sizeof why,
                  "kernel %s: launched on a stream of device %d while device "
                  "%d is current",
                  name, s->device, current_device());
    return fail(cudaErrorInvalidResourceHandle, why);
  }
  return 0;
}

// A copy's operand: device memory inside one block (device) or not device memory at all (host).
inline bool check_operand(const void* p, size_t n, bool device, const char* call,
                          const char* what) {
  if (n == 0) return true;
  const Region* r = find_region(p, n);
  if (device && !r) {
    const bool starts = find_region(p, 1) != nullptr;
    std::fprintf(
        stderr, "tg_emu: %s: %s %p (%zu bytes) is %s\n", call, what, p, n,
        starts ? "not inside one device block: it runs past the end" : "not device memory");
    return false;
  }
  if (!device && is_device_pointer(p)) {
    std::fprintf(stderr, "tg_emu: %s: %s %p is device memory where host memory was declared\n",
                 call, what, p);
    return false;
  }
  return true;
}
inline cudaError_t copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                        const char* call) {
  if (kind == cudaMemcpyDefault) {
    if (!check_operand(dst, n, is_device_pointer(dst), call, "destination") ||
        !check_operand(src, n, is_device_pointer(src), call, "source"))
      return fail(cudaErrorInvalidValue);
  } else if (kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDeviceToDevice) {
    const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (!check_operand(dst, n, dst_dev, call, "destination") ||
        !check_operand(src, n, src_dev, call, "source"))
      return fail(cudaErrorInvalidValue);
  } else {
    return fail(cudaErrorInvalidMemcpyDirection);
  }
  if (n == 0) return cudaSuccess;
  DeviceScope open;
  std::memmove(dst, src, n);
  return cudaSuccess;
}
}  // namespace tg_emu

// ---- errors ----
inline cudaError_t cudaGetLastError() {
  const cudaError_t e = tg_emu::last_error();
  tg_emu::last_error() = cudaSuccess;
  return e;
}
inline cudaError_t cudaPeekAtLastError() { return tg_emu::last_error(); }
inline const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define TG_EMU_NAME(x) \
  case x:              \
    return #x;
    TG_EMU_NAME(cudaSuccess)
    TG_EMU_NAME(cudaErrorInvalidValue)
    TG_EMU_NAME(cudaErrorMemoryAllocation)
    TG_EMU_NAME(cudaErrorInitializationError)
    TG_EMU_NAME(cudaErrorInvalidConfiguration)
    TG_EMU_NAME(cudaErrorInvalidSymbol)
    TG_EMU_NAME(cudaErrorInvalidDevicePointer)
    TG_EMU_NAME(cudaErrorInvalidMemcpyDirection)
    TG_EMU_NAME(cudaErrorNoDevice)
    TG_EMU_NAME(cudaErrorInvalidDevice)
    TG_EMU_NAME(cudaErrorInvalidResourceHandle)
    TG_EMU_NAME(cudaErrorNotReady)
    TG_EMU_NAME(cudaErrorIllegalAddress)
    TG_EMU_NAME(cudaErrorLaunchFailure)
    TG_EMU_NAME(cudaErrorNotSupported)
#undef TG_EMU_NAME
  }
  return "cudaErrorUnknown";
}
inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorInvalidMemcpyDirection:
      return "invalid copy direction for memcpy";
    case cudaErrorLaunchFailure: {
      thread_local std::string s;
      s = "unspecified launch failure (emulator: " + tg_emu::last_failure() + ")";
      return s.c_str();
    }
    default:
      return cudaGetErrorName(e);
  }
}

// ---- devices ----
inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = tg_emu::device_count();
  return *n > 0 ? cudaSuccess : tg_emu::fail(cudaErrorNoDevice);
}
inline cudaError_t cudaSetDevice(int d) {
  if (d < 0 || d >= tg_emu::device_count()) return tg_emu::fail(cudaErrorInvalidDevice);
  tg_emu::current_device() = d;
  return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int* d) {
  *d = tg_emu::current_device();
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  if (d < 0 || d >= tg_emu::device_count()) return tg_emu::fail(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "tapegrad host emulator");
  p->totalGlobalMem = tg_emu::memory().limit;
  p->sharedMemPerBlock = tg_emu::kSmemDefault;
  p->sharedMemPerBlockOptin = tg_emu::kSmemOptinMax;
  p->sharedMemPerMultiprocessor = 228 << 10;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = 132;
  p->maxThreadsPerMultiProcessor = 2048;
  p->l2CacheSize = 50 << 20;
  p->clockRate = 1980000;
  p->concurrentKernels = 1;
  p->unifiedAddressing = 1;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaDeviceReset() { return cudaSuccess; }
inline cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  tg_emu::Memory& m = tg_emu::memory();
  *total = m.limit;
  *free_bytes = m.limit - m.live_bytes;
  return cudaSuccess;
}
template <typename F>
cudaError_t cudaFuncSetAttribute(F* f, cudaFuncAttribute attr, int value) {
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || size_t(value) > tg_emu::kSmemOptinMax)
      return tg_emu::fail(cudaErrorInvalidValue);
    tg_emu::smem_optin()[reinterpret_cast<const void*>(f)] = size_t(value);
  }
  return cudaSuccess;
}

// ---- memory ----
inline cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = tg_emu::device_alloc(bytes, tg_emu::current_device());
  return *p ? cudaSuccess : tg_emu::fail(cudaErrorMemoryAllocation);
}
template <typename T>
cudaError_t cudaMalloc(T** p, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
inline cudaError_t cudaFree(void* p) {
  if (!p || tg_emu::device_free(p)) return cudaSuccess;
  return tg_emu::fail(cudaErrorInvalidValue, "cudaFree: not the start of a device block");
}
inline cudaError_t cudaMallocHost(void** p, size_t bytes) {
  *p = std::malloc(bytes ? bytes : 1);
  return *p ? cudaSuccess : tg_emu::fail(cudaErrorMemoryAllocation);
}
inline cudaError_t cudaFreeHost(void* p) {
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  return tg_emu::copy(dst, src, n, kind, "cudaMemcpy");
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                                   cudaStream_t = nullptr) {
  return tg_emu::copy(dst, src, n, kind, "cudaMemcpyAsync");
}
inline cudaError_t cudaMemcpyPeer(void* dst, int dst_dev, const void* src, int src_dev, size_t n) {
  const int nd = tg_emu::device_count();
  if (dst_dev < 0 || dst_dev >= nd || src_dev < 0 || src_dev >= nd)
    return tg_emu::fail(cudaErrorInvalidDevice);
  const tg_emu::Region* d = tg_emu::find_region(dst, n);
  const tg_emu::Region* s = tg_emu::find_region(src, n);
  if (n && (!d || !s || d->device != dst_dev || s->device != src_dev))
    return tg_emu::fail(cudaErrorInvalidValue,
                        "cudaMemcpyPeer: an operand is not a device block of the device named");
  return tg_emu::copy(dst, src, n, cudaMemcpyDeviceToDevice, "cudaMemcpyPeer");
}
inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t = nullptr) {
  if (!tg_emu::check_operand(p, n, true, "cudaMemset", "destination"))
    return tg_emu::fail(cudaErrorInvalidValue);
  if (n == 0) return cudaSuccess;
  tg_emu::DeviceScope open;
  std::memset(p, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void* p, int v, size_t n) { return cudaMemsetAsync(p, v, n); }
// __constant__ / __device__ variables are plain globals.
template <typename T>
cudaError_t cudaMemcpyToSymbol(const T& symbol, const void* src, size_t n, size_t offset = 0,
                               cudaMemcpyKind = cudaMemcpyHostToDevice) {
  if (offset + n > sizeof(T)) return tg_emu::fail(cudaErrorInvalidValue);
  std::memcpy(reinterpret_cast<char*>(const_cast<T*>(&symbol)) + offset, src, n);
  return cudaSuccess;
}

// ---- streams and events (synchronous: there is never anything to wait for) ----
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = new CUstream_st{tg_emu::current_device()};
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, 0); }
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete s;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
struct CUevent_st {
  std::chrono::steady_clock::time_point t;
};
typedef CUevent_st* cudaEvent_t;
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) {
  *e = new CUevent_st{std::chrono::steady_clock::now()};
  return cudaSuccess;
}
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, 0); }
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr) {
  e->t = std::chrono::steady_clock::now();
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned = 0) {
  return cudaSuccess;
}
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
  return cudaSuccess;
}
