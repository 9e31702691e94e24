// autograd/storage.cpp — Storage: CPU blocks from a caching allocator (64-byte aligned, tiny
// tensors inline), CUDA blocks from the CUDA module's caching allocator.
#include "autograd/cuda_call.hpp"
#include "autograd/device_detail.hpp"
#include "autograd/tensor.hpp"
#include "cuda/runtime.cuh"

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tg {
using detail::check_cuda_index;
using detail::cuda_call;

// ---- storage ----
// A caching allocator for CPU blocks: freed blocks wait in per-size free lists and are handed
// out again for the same size, which training loops ask for every step. This saves malloc's
// bookkeeping on small blocks and the page faults of a fresh mmap on large ones. At most
// kCacheLimit bytes are kept; past that a freed block goes back to the system. Sanitizer builds
// skip the cache so that use-after-free stays visible.
namespace {
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kCacheLimit = 0;
#else
constexpr size_t kCacheLimit = size_t(512) << 20;
#endif
struct BlockCache {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free;
  size_t cached = 0;
  ~BlockCache() {
    for (auto& [size, blocks] : free)
      for (void* p : blocks) std::free(p);
  }
  void* get(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = free.find(bytes);
      if (it != free.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached -= bytes;
        return p;
      }
    }
    return std::aligned_alloc(64, bytes);  // 64-byte alignment for SIMD
  }
  void put(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (cached + bytes <= kCacheLimit) {
        free[bytes].push_back(p);
        cached += bytes;
        return;
      }
    }
    std::free(p);
  }
};
BlockCache& block_cache() {
  static BlockCache* c = new BlockCache();  // never destroyed: storages may outlive statics
  return *c;
}
size_t block_bytes(size_t n) { return ((n + 63) / 64) * 64; }

// Bytes of live block storages and their peak (cpu_memory); tiny inline ones are not counted.
std::atomic<size_t> g_cpu_allocated{0}, g_cpu_peak{0};
void note_alloc(size_t bytes) {
  const size_t now = g_cpu_allocated.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  size_t peak = g_cpu_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_cpu_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
}  // namespace

Storage::Storage(size_t n, Device dev) : nbytes(n), device(dev) {
  if (dev.type == DeviceType::CUDA) {
    check_cuda_index(dev.index, tg::cuda::current_op());
    data = cuda_call(tg::cuda::current_op(), [&] { return tg::cuda::alloc(n, dev.index); });
    return;
  }
  if (n <= kSmallBytes) {  // the first 64-byte boundary inside small (16-byte aligned: <= 48 in)
    const auto p = reinterpret_cast<uintptr_t>(small);
    data = small + ((64 - p % 64) % 64);
    return;
  }
  data = block_cache().get(block_bytes(n));
  if (!data) throw Error(fmt::format("Storage: out of memory allocating {} bytes", n));
  note_alloc(block_bytes(n));
}
Storage::Storage(void* external, size_t n, std::shared_ptr<void> keep)
    : data(external), nbytes(n), device(kCPU), owner(std::move(keep)) {}
Storage::~Storage() {
  if (owner) return;  // external memory: released with its owner
  if (device.type == DeviceType::CUDA) {
    tg::cuda::free(data, device.index);
    return;
  }
  const auto* d = static_cast<unsigned char*>(data);
  if (d < small || d >= small + sizeof(small)) {
    g_cpu_allocated.fetch_sub(block_bytes(nbytes), std::memory_order_relaxed);
    block_cache().put(data, block_bytes(nbytes));
  }
}

CpuMemory cpu_memory() {
  return CpuMemory{g_cpu_allocated.load(std::memory_order_relaxed),
                   g_cpu_peak.load(std::memory_order_relaxed)};
}
void cpu_reset_peak_memory() {
  g_cpu_peak.store(g_cpu_allocated.load(std::memory_order_relaxed), std::memory_order_relaxed);
}
}  // namespace tg
