// autograd/device.cpp — the device runtime for users: CUDA device count, synchronisation, the
// caching allocator's statistics, TF32, and the one thread setting for OpenMP and OpenBLAS.
#include "autograd/device_detail.hpp"
#include "autograd/tensor.hpp"
#include "cuda/kernels.cuh"
#include "cuda/runtime.cuh"

#include <fmt/format.h>

#include <cstdlib>
#include <thread>

#ifdef _OPENMP
#include <omp.h>
#endif

extern "C" void openblas_set_num_threads(int);

namespace tg {
using detail::check_cuda_index;
using detail::cuda_call;

// ---- CUDA runtime, for users (the kernels are reached through ops/) ----
int cuda_device_count() { return tg::cuda::device_count(); }
bool cuda_is_available() { return tg::cuda::device_count() > 0; }
std::string cuda_unavailable_reason() { return tg::cuda::unavailable_reason(); }
void cuda_synchronize(int index) {
  check_cuda_index(index, "cuda_synchronize");
  cuda_call("cuda_synchronize", [&] { tg::cuda::synchronize(index); });
}
CudaMemory cuda_memory(int index) {
  check_cuda_index(index, "cuda_memory");
  tg::cuda::MemoryStats s = cuda_call("cuda_memory", [&] { return tg::cuda::memory_stats(index); });
  return CudaMemory{s.allocated,     s.peak_allocated, s.reserved,
                    s.peak_reserved, s.device_mallocs, s.cache_hits};
}
void cuda_reset_peak_memory(int index) {
  check_cuda_index(index, "cuda_reset_peak_memory");
  cuda_call("cuda_reset_peak_memory", [&] { tg::cuda::reset_peak_memory(index); });
}
void cuda_empty_cache(int index) {
  check_cuda_index(index, "cuda_empty_cache");
  cuda_call("cuda_empty_cache", [&] { tg::cuda::empty_cache(index); });
}
void cuda_set_allow_tf32(bool on) { tg::cuda::set_allow_tf32(on); }

// ---- threads ----
namespace {
int initial_threads() {
  if (const char* e = std::getenv("OMP_NUM_THREADS")) {
    int n = std::atoi(e);
    if (n > 0) return n;
  }
  int hw = static_cast<int>(std::thread::hardware_concurrency());
  return hw > 0 ? hw : 1;
}
int g_num_threads = 0;
}  // namespace
void set_num_threads(int n) {
  if (n < 1) throw Error(fmt::format("set_num_threads: n must be >= 1, got {}", n));
  g_num_threads = n;
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
  openblas_set_num_threads(n);
}
int get_num_threads() {
  if (g_num_threads == 0) set_num_threads(initial_threads());
  return g_num_threads;
}
namespace {
// Applies the setting at start-up, so OpenBLAS and OpenMP agree before the first op runs.
const int g_threads_init = (get_num_threads(), 0);
}  // namespace

}  // namespace tg
