// autograd/device.cpp — the device runtime for users: CUDA device count, synchronisation, the
// caching allocator's statistics, TF32, and the one thread setting for OpenMP and OpenBLAS; and
// the tensor's device-memory operations of device_detail.hpp (copies, casts, fills, the engine's
// gradient add), so no other autograd file but storage.cpp calls cuda/.
#include "autograd/cuda_call.hpp"
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
namespace detail {
void check_cuda_index(int index, const char* op) {
  const int n = tg::cuda::device_count();
  if (index < 0 || index >= n) {
    const std::string why = tg::cuda::unavailable_reason();
    throw Error(fmt::format("{}: cuda:{} is not available ({} CUDA device{} visible{}{})", op,
                            index, n, n == 1 ? "" : "s", why.empty() ? "" : "; ", why));
  }
}

namespace {
tg::cuda::DT code(DType t) { return static_cast<tg::cuda::DT>(t); }
// A 1-d or N-d index space over a contiguous out with operand 1 at `strides` (and operand 2
// contiguous too).
tg::cuda::Strided strided(const Shape& shape, const Shape& strides, const char* op) {
  if (shape.size() > static_cast<size_t>(tg::cuda::kMaxDims))
    throw Error(fmt::format("{}: shape {} has {} dims; CUDA kernels take at most {}", op,
                            shape_str(shape), shape.size(), tg::cuda::kMaxDims));
  tg::cuda::Strided s;
  s.ndim = static_cast<int>(shape.size());
  const Shape cs = contiguous_strides(shape);
  for (int d = 0; d < s.ndim; ++d) {
    s.shape[d] = shape[d];
    s.stride[0][d] = s.stride[2][d] = cs[d];
    s.stride[1][d] = strides[d];
  }
  return s;
}
}  // namespace

void cuda_dense_copy(const Tensor& out, const Tensor& x, const char* op) {
  const tg::cuda::Strided s = strided(x.shape(), x.strides(), op);
  cuda_call(op, [&] {
    tg::cuda::set_device(x.device().index);
    tg::cuda::strided_copy(code(x.dtype()), out.data_ptr(), x.data_ptr(), s);
  });
}
void cuda_cast(const Tensor& out, const Tensor& src, const char* op) {
  cuda_call(op, [&] {
    tg::cuda::set_device(src.device().index);
    tg::cuda::cast(code(src.dtype()), code(out.dtype()), out.data_ptr(), src.data_ptr(),
                   src.numel());
  });
}
void cuda_copy_bytes(void* dst, Device to, const void* src, Device from, size_t bytes,
                     const char* op) {
  cuda_call(op, [&] {
    if (from.type == DeviceType::CPU)
      tg::cuda::copy_to_device(dst, src, bytes, to.index);
    else if (to.type == DeviceType::CPU)
      tg::cuda::copy_to_host(dst, src, bytes, from.index);
    else if (from.index == to.index)
      tg::cuda::copy_on_device(dst, src, bytes, to.index);
    else
      tg::cuda::copy_between_devices(dst, to.index, src, from.index, bytes);
  });
}
void cuda_fill(const Tensor& t, double v, const char* op) {
  cuda_call(op, [&] {
    tg::cuda::set_device(t.device().index);
    tg::cuda::fill(code(t.dtype()), t.data_ptr(), t.numel(), v);
  });
}
void cuda_zero(void* p, size_t bytes, Device d, const char* op) {
  cuda_call(op, [&] { tg::cuda::memset_zero(p, bytes, d.index); });
}
void cuda_add_into(const Tensor& dst, const Tensor& src, const char* op) {
  const tg::cuda::Strided st = strided({dst.numel()}, {1}, op);
  cuda_call(op, [&] {
    tg::cuda::set_device(dst.device().index);
    tg::cuda::binary(tg::cuda::BinOp::Add, code(dst.dtype()), code(dst.dtype()), dst.data_ptr(),
                     dst.data_ptr(), src.data_ptr(), st);
  });
}
}  // namespace detail

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
