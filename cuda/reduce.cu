// cuda/reduce.cu — the reductions of kernels.cuh over the middle dim of (outer, r, inner): sum,
// max, min (NaN propagates), argmax (first maximum; the first NaN wins), and the sum of squares
// behind gradient-norm clipping. CPU twin: ops/reduce.cpp (the ops layer calls reduce once per
// contiguous group of reduced dims, or after a permute). Deliberately not here: softmax
// (softmax.cu), layer norm statistics (norm.cu), the spreading backward of sum/max (it is a
// broadcast: elementwise.cu / copy.cu).
//
// Layouts: inner == 1 and r >= 32 -> one warp per (row, split), lanes striding the row
// (coalesced), then a warp-shuffle tree; otherwise one thread per (outer, split, inner) walking
// r (coalesced across inner). When outer·inner is too small to fill the GPU, r is cut into
// `splits` chunks whose partials (outer, splits, inner) are reduced by a second pass. The splits
// depend only on the shape, so every result is deterministic (run to run and GPU to GPU).
//
// Numerics: float32 sums accumulate in double, like the CPU (ops/reduce.cpp: "float32
// accumulates in double"), which is tighter than kernels.cuh's float32 tree promise; int64 sums
// in int64. sum_squares: double partials, one atomicAdd(double) per block (order varies).
//
// GPU run, check first: (1) sum over (1, 10^7, 1) and (1, 4096, 768) (the bias-grad shape:
// splits + second pass) against the float64 CPU; (2) max with a NaN in the last split;
// (3) argmax with ties across lanes, with NaN at two places, and rows of all -inf (index 0);
// (4) reduce with r == 0 (sum writes 0) and inner == 1 with r < 32 (the column path).
#include "cuda/check.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace tg::cuda {
namespace {
using detail::DeviceTemp;

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr unsigned kMaxBlocks = 16384;         // grid-stride beyond this
constexpr int64_t kTargetWarps = 8192;         // about 64 resident warps on each of 132 SMs
constexpr int64_t kTargetThreads = 32 * 8192;  // the same, counted in threads
constexpr int64_t kMinRowChunk = 2048;         // elements per warp before splitting a row
constexpr int64_t kMinColChunk = 32;           // elements per thread before splitting r

unsigned blocks(int64_t threads) {
  unsigned g = detail::grid_for(threads, kThreads);
  return g < kMaxBlocks ? g : kMaxBlocks;
}
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---- the reduction operators ----
template <typename A>
__device__ __forceinline__ bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>) return v != v;
  return false;
}

template <RedOp OP, typename A>
struct Red {
  __device__ static A identity() {
    if constexpr (OP == RedOp::Sum) return A(0);
    if constexpr (std::is_floating_point_v<A>) return OP == RedOp::Max ? A(-INFINITY) : A(INFINITY);
    return OP == RedOp::Max ? A(INT64_MIN) : A(INT64_MAX);
  }
  // Max/Min: a NaN on either side wins (once NaN, stays NaN), like the CPU's max.
  __device__ static A combine(A a, A b) {
    if constexpr (OP == RedOp::Sum) return a + b;
    if constexpr (OP == RedOp::Max) return (a > b || is_nan(a)) ? a : b;
    return (a < b || is_nan(a)) ? a : b;
  }
};

// The accumulator type: Sum of float32 in double (as on the CPU); otherwise the element type.
template <RedOp OP, typename T>
using Acc = std::conditional_t<OP == RedOp::Sum && std::is_same_v<T, float>, double, T>;

// Every lane ends with the combination of all 32 lanes' values (xor butterfly, fixed order).
template <RedOp OP, typename A>
__device__ __forceinline__ A warp_reduce(A v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = Red<OP, A>::combine(v, __shfl_xor_sync(~0u, v, off));
  return v;
}

// ---- reduce kernels ----
// inner == 1: warp w handles unit u = (o, s) = row o, chunk s of `chunk` elements; out[u].
template <RedOp OP, typename In, typename A, typename Out>
__global__ void row_reduce_kernel(Out* out, const In* x, int64_t units, int64_t r, int64_t splits,
                                  int64_t chunk) {
  const int lane = threadIdx.x & 31;
  const int64_t nwarps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t u = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5; u < units;
       u += nwarps) {  // u is the same on all lanes of a warp: the shuffles below are uniform
    const int64_t o = u / splits, s = u - o * splits;
    const int64_t k1 = min(r, (s + 1) * chunk);
    const In* row = x + o * r;
    A a = Red<OP, A>::identity();
#pragma unroll 4
    for (int64_t k = s * chunk + lane; k < k1; k += 32)
      a = Red<OP, A>::combine(a, static_cast<A>(row[k]));
    a = warp_reduce<OP>(a);
    if (lane == 0) out[u] = static_cast<Out>(a);
  }
}

// Thread t = (o, s, i) walks chunk s of r at column i; out (outer, splits, inner)[t].
template <RedOp OP, typename In, typename A, typename Out>
__global__ void col_reduce_kernel(Out* out, const In* x, int64_t total, int64_t r, int64_t inner,
                                  int64_t splits, int64_t chunk) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(blockDim.x) * gridDim.x) {
    const int64_t u = t / inner, i = t - u * inner;
    const int64_t o = u / splits, s = u - o * splits;
    const int64_t k0 = s * chunk, k1 = min(r, k0 + chunk);
    const In* p = x + (o * r + k0) * inner + i;
    A a = Red<OP, A>::identity();
#pragma unroll 4
    for (int64_t k = k0; k < k1; ++k, p += inner) a = Red<OP, A>::combine(a, static_cast<A>(*p));
    out[t] = static_cast<Out>(a);
  }
}

// out (outer, inner) = reduce of x (outer, r, inner), accumulating in A; may split r (then a
// second pass reduces the partials, without splitting again).
template <RedOp OP, typename In, typename A, typename Out>
void reduce_pass(Out* out, const In* x, int64_t outer, int64_t r, int64_t inner, bool may_split) {
  cudaStream_t st = detail::cur_stream();
  if (inner == 1 && r >= 32) {
    int64_t splits = 1;
    if (may_split)
      splits =
          std::max<int64_t>(1, std::min(ceil_div(kTargetWarps, outer), ceil_div(r, kMinRowChunk)));
    const int64_t chunk = ceil_div(r, splits);
    splits = ceil_div(r, chunk);  // no empty chunk
    if (splits == 1) {
      row_reduce_kernel<OP, In, A, Out>
          <<<blocks(outer * 32), kThreads, 0, st>>>(out, x, outer, r, 1, r);
      TG_CUDA_LAUNCH_CHECK("reduce");
      return;
    }
    DeviceTemp part(static_cast<size_t>(outer * splits) * sizeof(A));
    row_reduce_kernel<OP, In, A, A><<<blocks(outer * splits * 32), kThreads, 0, st>>>(
        part.as<A>(), x, outer * splits, r, splits, chunk);
    TG_CUDA_LAUNCH_CHECK("reduce");
    reduce_pass<OP, A, A, Out>(out, part.as<A>(), outer, splits, 1, false);
    return;
  }
  int64_t splits = 1;
  if (may_split)
    splits = std::max<int64_t>(
        1, std::min(ceil_div(kTargetThreads, outer * inner), ceil_div(r, kMinColChunk)));
  const int64_t chunk = std::max<int64_t>(1, ceil_div(r, splits));
  splits = std::max<int64_t>(1, ceil_div(r, chunk));
  if (splits == 1) {
    col_reduce_kernel<OP, In, A, Out>
        <<<blocks(outer * inner), kThreads, 0, st>>>(out, x, outer * inner, r, inner, 1, r);
    TG_CUDA_LAUNCH_CHECK("reduce");
    return;
  }
  const int64_t total = outer * splits * inner;
  DeviceTemp part(static_cast<size_t>(total) * sizeof(A));
  col_reduce_kernel<OP, In, A, A>
      <<<blocks(total), kThreads, 0, st>>>(part.as<A>(), x, total, r, inner, splits, chunk);
  TG_CUDA_LAUNCH_CHECK("reduce");
  reduce_pass<OP, A, A, Out>(out, part.as<A>(), outer, splits, inner, false);
}

template <RedOp OP, typename T>
void reduce_typed(void* out, const void* x, int64_t outer, int64_t r, int64_t inner) {
  reduce_pass<OP, T, Acc<OP, T>, T>(static_cast<T*>(out), static_cast<const T*>(x), outer, r, inner,
                                    true);
}

// ---- argmax ----
// The CPU's scan (ops/reduce.cpp): the best so far b is replaced by v when b is not NaN and
// (v > b or v is NaN). Over increasing k this keeps the first maximum, or the first NaN.
template <typename T>
__device__ __forceinline__ bool scan_takes(T v, T b) {
  return !is_nan(b) && (v > b || is_nan(v));
}
// The same rule between two candidates from anywhere in the row (associative, commutative):
// true when (v, i) beats (b, j).
template <typename T>
__device__ __forceinline__ bool beats(T v, int64_t i, T b, int64_t j) {
  if (is_nan(v) || is_nan(b)) return is_nan(v) && (!is_nan(b) || i < j);
  return v > b || (v == b && i < j);
}

// inner == 1: warp per row; each lane scans k = lane, lane + 32, ... then a shuffle tree.
template <typename T>
__global__ void argmax_row_kernel(int64_t* out, const T* x, int64_t outer, int64_t r) {
  const int lane = threadIdx.x & 31;
  const int64_t nwarps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t o = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5; o < outer;
       o += nwarps) {  // warp-uniform (r >= 32: every lane has a first element)
    const T* row = x + o * r;
    int64_t bi = lane;
    T b = row[lane];
    for (int64_t k = lane + 32; k < r; k += 32) {
      const T v = row[k];
      if (scan_takes(v, b)) {
        b = v;
        bi = k;
      }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      const T v = __shfl_xor_sync(~0u, b, off);
      const int64_t i = __shfl_xor_sync(~0u, bi, off);
      if (beats(v, i, b, bi)) {
        b = v;
        bi = i;
      }
    }
    if (lane == 0) out[o] = bi;
  }
}

// Thread per (o, i): the CPU's scan over r, verbatim.
template <typename T>
__global__ void argmax_col_kernel(int64_t* out, const T* x, int64_t total, int64_t r,
                                  int64_t inner) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(blockDim.x) * gridDim.x) {
    const int64_t o = t / inner, i = t - o * inner;
    const T* p = x + o * r * inner + i;
    int64_t bi = 0;
    T b = p[0];
    for (int64_t k = 1; k < r; ++k) {
      const T v = p[k * inner];
      if (scan_takes(v, b)) {
        b = v;
        bi = k;
      }
    }
    out[t] = bi;
  }
}

// ---- sum of squares ----
template <typename T>
__global__ void sum_squares_kernel(double* acc, const T* x, int64_t n) {
  double s = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x) {
    const double v = static_cast<double>(x[i]);
    s += v * v;
  }
  __shared__ double warp_sums[kWarpsPerBlock];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  s = warp_reduce<RedOp::Sum>(s);
  if (lane == 0) warp_sums[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < kWarpsPerBlock ? warp_sums[lane] : 0.0;
    s = warp_reduce<RedOp::Sum>(s);
    if (lane == 0) atomicAdd(acc, s);
  }
}

}  // namespace

namespace {
// Calls f(T{}) for T = float, double or int64_t (the dtypes reductions take, as on the CPU).
template <typename F>
void dispatch_numeric(DT dt, const char* name, F&& f) {
  switch (dt) {
    case DT::F32:
      return f(float{});
    case DT::F64:
      return f(double{});
    case DT::I64:
      return f(int64_t{});
    default:
      throw Error(std::string(name) +
                  ": bool input on cuda (expected float32, float64 or int64; cast first)");
  }
}
}  // namespace

// out (outer, inner) = reduce of x (outer, r, inner) over r; dt F32, F64 or I64.
void reduce(RedOp op, DT dt, void* out, const void* x, int64_t outer, int64_t r, int64_t inner) {
  dispatch_numeric(dt, "reduce", [&](auto tag) {
    using T = decltype(tag);
    if (outer * inner == 0) return;
    switch (op) {
      case RedOp::Sum:
        return reduce_typed<RedOp::Sum, T>(out, x, outer, r, inner);
      case RedOp::Max:
        return reduce_typed<RedOp::Max, T>(out, x, outer, r, inner);
      case RedOp::Min:
        return reduce_typed<RedOp::Min, T>(out, x, outer, r, inner);
    }
    throw Error("reduce: unknown op " + std::to_string(static_cast<int>(op)));
  });
}

// out (outer, inner) int64 = first index of the maximum of x (outer, r, inner) along r.
void argmax(DT dt, int64_t* out, const void* x, int64_t outer, int64_t r, int64_t inner) {
  dispatch_numeric(dt, "argmax", [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = outer * inner;
    if (total == 0) return;
    cudaStream_t st = detail::cur_stream();
    if (r == 0) {  // ops/ rejects this; write index 0 rather than leave garbage
      TG_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<size_t>(total) * sizeof(int64_t), st));
      return;
    }
    const T* px = static_cast<const T*>(x);
    if (inner == 1 && r >= 32)
      argmax_row_kernel<T><<<blocks(outer * 32), kThreads, 0, st>>>(out, px, outer, r);
    else
      argmax_col_kernel<T><<<blocks(total), kThreads, 0, st>>>(out, px, total, r, inner);
    TG_CUDA_LAUNCH_CHECK("argmax");
  });
}

// *acc += Σ x[i]² over x (n), in double.
void sum_squares(DT dt, double* acc, const void* x, int64_t n) {
  if (n == 0) return;
  const unsigned grid = std::min<unsigned>(blocks(n), 1024);  // at most 1024 atomics
  TG_DISPATCH_FLOAT(dt, "sum_squares", [&] {
    sum_squares_kernel<scalar_t>
        <<<grid, kThreads, 0, detail::cur_stream()>>>(acc, static_cast<const scalar_t*>(x), n);
  });
  TG_CUDA_LAUNCH_CHECK("sum_squares");
}

}  // namespace tg::cuda
