// cuda/rowwise.cuh — for .cu files only: the "row groups" behind the row kernels of softmax.cu,
// norm.cu and loss.cu. A group is a warp, a whole block or a single thread that walks one row
// of `len` elements (element j at base + j·stride, the group's members taking j = first,
// first + step, ...) and reduces over it; every member gets the reduced value. The reduction
// order is fixed by the group's size, so a given launch configuration is deterministic.
// Deliberately not here: whole-tensor reductions (reduce.cu), row kernels themselves.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tg::cuda::rowwise {

constexpr unsigned kFullMask = 0xffffffffu;

// Butterfly (xor) reductions: every lane computes the same additions in the same order, so all
// lanes end with bit-identical results. max uses fmax (NaN-skipping, like std::max(acc, x) with
// a non-NaN accumulator on the CPU).
template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}
template <typename T>
__device__ __forceinline__ T warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

// The 32 lanes of one warp share a row. Every lane of the warp must call the reductions.
struct WarpRow {
  int first;  // lane
  static constexpr int step = 32;
  template <typename T>
  __device__ T sum(T v) const {
    return warp_sum(v);
  }
  template <typename T>
  __device__ T max(T v) const {
    return warp_max(v);
  }
  __device__ bool any(bool p) const { return __any_sync(kFullMask, p) != 0; }
  __device__ bool leader() const { return first == 0; }
};

// Every thread of the block shares a row (blockDim.x a multiple of 32, at most 1024). `shm` is
// 32 doubles of shared memory owned by the kernel; every thread must call the reductions.
struct BlockRow {
  int first;  // threadIdx.x
  int step;   // blockDim.x
  double* shm;
  template <typename T, typename Op>
  __device__ T reduce(T v, Op op, T identity) const {
    T* s = reinterpret_cast<T*>(shm);
    v = op(v);
    const int lane = first & 31, warp = first >> 5, nwarps = step >> 5;
    __syncthreads();  // the previous reduction may still be reading shm
    if (lane == 0) s[warp] = v;
    __syncthreads();
    // Every warp reduces the partials itself: all threads hold the result, no broadcast needed.
    return op(lane < nwarps ? s[lane] : identity);
  }
  template <typename T>
  __device__ T sum(T v) const {
    return reduce(
        v, [](T x) { return warp_sum(x); }, T(0));
  }
  template <typename T>
  __device__ T max(T v) const {
    return reduce(
        v, [](T x) { return warp_max(x); }, T(-INFINITY));
  }
  __device__ bool any(bool p) const { return __syncthreads_or(p) != 0; }
  __device__ bool leader() const { return first == 0; }
};

// One thread owns the row (strided rows, e.g. softmax over a non-last dim).
struct ThreadRow {
  static constexpr int first = 0;
  static constexpr int step = 1;
  template <typename T>
  __device__ T sum(T v) const {
    return v;
  }
  template <typename T>
  __device__ T max(T v) const {
    return v;
  }
  __device__ bool any(bool p) const { return p; }
  __device__ bool leader() const { return true; }
};

// Launch shapes shared by the row kernels: warps of kWarpRowThreads / 32 rows per block for rows
// up to kWarpRowMax elements, blocks of kBlockRowThreads per row above.
constexpr int kWarpRowThreads = 256;
constexpr int kWarpRowsPerBlock = kWarpRowThreads / 32;
constexpr int64_t kWarpRowMax = 1024;
constexpr int kBlockRowThreads = 512;

}  // namespace tg::cuda::rowwise
