// cuda/reduce.cu — the reductions of kernels.cuh over the middle dim of (outer, r, inner) and
// their backward spreads: sum and mean, max and min (NaN propagates; ties share the gradient),
// var (the means saved in double), argmax (first maximum; the first NaN wins), and the sum of
// squares behind gradient-norm clipping. CPU twins: ops/reduce/cpu/reduce.cpp
// (ops/reduce/reduce.cpp views a reduction as (outer, r, inner), permuting first when the reduced
// dims are apart). Deliberately not here: softmax (softmax.cu), layer norm statistics (norm.cu).
//
// Layouts: inner == 1 and r >= 32 -> one warp per (row, split), lanes striding the row
// (coalesced), then a warp-shuffle tree; otherwise one thread per (outer, split, inner) walking
// r (coalesced across inner). var and the max/min backward (two passes over a row: the mean or
// the ties, then the deviations or the shares) use the same two layouts without splits; the
// sum and var backward are one thread per dx element. When outer·inner is too small to fill the
// GPU, r is cut into `splits` chunks whose partials (outer, splits, inner) are reduced by a second
// pass. The splits depend only on the shape, so every result is deterministic (run to run and GPU
// to GPU).
//
// Numerics: float32 sums accumulate in double, like the CPU (ops/reduce/reduce.cpp: "float32
// accumulates in double"), which is tighter than kernels.cuh's float32 tree promise; int64 sums
// in int64. sum_squares: double partials, one atomicAdd(double) per block (order varies).
//
// GPU run, check first: (1) sum over (1, 10^7, 1) and (1, 4096, 768) (the bias-grad shape:
// splits + second pass) against the float64 CPU; (2) max with a NaN in the last split;
// (3) argmax with ties across lanes, with NaN at two places, and rows of all -inf (index 0);
// (4) reduce with r == 0 (sum writes 0) and inner == 1 with r < 32 (the column path).
#include "cuda/check.cuh"
#include "cuda/reduced.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace tg::cuda {
namespace {
using detail::DeviceBuffer;

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr unsigned kMaxBlocks = 16384;         // grid-stride beyond this
constexpr int64_t kTargetWarps = 8192;         // about 64 resident warps on each of 132 SMs
constexpr int64_t kTargetThreads = 32 * 8192;  // the same, counted in threads
constexpr int64_t kMinRowChunk = 2048;         // elements per warp before splitting a row
constexpr int64_t kMinColChunk = 32;           // elements per thread before splitting r

unsigned blocks(int64_t threads) { return detail::blocks_for(threads, kThreads, kMaxBlocks); }
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

// A result as written out: a float accumulator divided by `div` (mean; 1 otherwise, exact) in
// its own precision and rounded once, as the CPU does; an integer one as it is.
template <typename Out, typename A>
__device__ __forceinline__ Out finish(A a, double div) {
  if constexpr (std::is_floating_point_v<A>) return static_cast<Out>(a / static_cast<A>(div));
  return static_cast<Out>(a);
}

// ---- reduce kernels ----
// inner == 1: warp w handles unit u = (o, s) = row o, chunk s of `chunk` elements; out[u].
template <RedOp OP, typename In, typename A, typename Out>
__global__ void row_reduce_kernel(Out* out, const In* x, int64_t units, int64_t r, int64_t splits,
                                  int64_t chunk, double div) {
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
    if (lane == 0) out[u] = finish<Out>(a, div);
  }
}

// Thread t = (o, s, i) walks chunk s of r at column i; out (outer, splits, inner)[t].
template <RedOp OP, typename In, typename A, typename Out>
__global__ void col_reduce_kernel(Out* out, const In* x, int64_t total, int64_t r, int64_t inner,
                                  int64_t splits, int64_t chunk, double div) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(blockDim.x) * gridDim.x) {
    const int64_t u = t / inner, i = t - u * inner;
    const int64_t o = u / splits, s = u - o * splits;
    const int64_t k0 = s * chunk, k1 = min(r, k0 + chunk);
    const In* p = x + (o * r + k0) * inner + i;
    A a = Red<OP, A>::identity();
#pragma unroll 4
    for (int64_t k = k0; k < k1; ++k, p += inner) a = Red<OP, A>::combine(a, static_cast<A>(*p));
    out[t] = finish<Out>(a, div);
  }
}

// out (outer, inner) = reduce of x (outer, r, inner), accumulating in A, divided by div; may split
// r (then a second pass reduces the partials, without splitting again, and divides).
template <RedOp OP, typename In, typename A, typename Out>
void reduce_pass(Out* out, const In* x, int64_t outer, int64_t r, int64_t inner, bool may_split,
                 double div) {
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
          <<<blocks(outer * 32), kThreads, 0, st>>>(out, x, outer, r, 1, r, div);
      TG_CUDA_LAUNCH_CHECK("reduce");
      return;
    }
    DeviceBuffer part(static_cast<size_t>(outer * splits) * sizeof(A));
    row_reduce_kernel<OP, In, A, A><<<blocks(outer * splits * 32), kThreads, 0, st>>>(
        part.as<A>(), x, outer * splits, r, splits, chunk, 1.0);
    TG_CUDA_LAUNCH_CHECK("reduce");
    reduce_pass<OP, A, A, Out>(out, part.as<A>(), outer, splits, 1, false, div);
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
        <<<blocks(outer * inner), kThreads, 0, st>>>(out, x, outer * inner, r, inner, 1, r, div);
    TG_CUDA_LAUNCH_CHECK("reduce");
    return;
  }
  const int64_t total = outer * splits * inner;
  DeviceBuffer part(static_cast<size_t>(total) * sizeof(A));
  col_reduce_kernel<OP, In, A, A>
      <<<blocks(total), kThreads, 0, st>>>(part.as<A>(), x, total, r, inner, splits, chunk, 1.0);
  TG_CUDA_LAUNCH_CHECK("reduce");
  reduce_pass<OP, A, A, Out>(out, part.as<A>(), outer, splits, inner, false, div);
}

template <RedOp OP, typename T>
void reduce_typed(void* out, const void* x, int64_t outer, int64_t r, int64_t inner,
                  double div = 1.0) {
  reduce_pass<OP, T, Acc<OP, T>, T>(static_cast<T*>(out), static_cast<const T*>(x), outer, r, inner,
                                    true, div);
}

// ---- backward spreads and var ----
// dx[t] = dout[(o, i)]·scale for t = (o, k, i), the product in double.
template <typename T>
__global__ void sum_backward_kernel(T* dx, const T* dout, int64_t total, int64_t r, int64_t inner,
                                    double scale) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(blockDim.x) * gridDim.x) {
    const int64_t i = t % inner, o = t / (r * inner);
    dx[t] = static_cast<T>(static_cast<double>(dout[o * inner + i]) * scale);
  }
}

// dx[t] = (x[t] - mean[(o, i)])·(2·dout[(o, i)]/denom), in double, as the CPU.
template <typename T>
__global__ void var_backward_kernel(T* dx, const T* dout, const T* x, const double* mean,
                                    int64_t total, int64_t r, int64_t inner, double denom) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total;
       t += int64_t(blockDim.x) * gridDim.x) {
    const int64_t i = t % inner, o = t / (r * inner), u = o * inner + i;
    const double c = 2.0 * static_cast<double>(dout[u]) / denom;
    dx[t] = static_cast<T>((static_cast<double>(x[t]) - mean[u]) * c);
  }
}

// One output u = (o, i) of x (outer, r, inner), read by `lanes` threads (32: a warp along a
// contiguous row, inner == 1; 1: a thread down a column). each(f) calls f(offset) for the line's
// elements this thread reads; sum() combines the lanes' partials in a fixed order, so each result
// depends on the shape alone.
struct Line {
  const int64_t base, step, r;
  const int lane, lanes;
  template <typename F>
  __device__ void each(F&& f) const {
    for (int64_t k = lane; k < r; k += lanes) f(base + k * step);
  }
  __device__ double sum(double v) const { return lanes == 32 ? warp_reduce<RedOp::Sum>(v) : v; }
};

// Calls f(line, u) for every output u of (outer, r, inner): a warp per row when inner == 1 and
// r >= 32, else a thread per (o, i). Warp-uniform in the warp layout (u is the same on all lanes).
template <typename F>
__device__ void for_lines(int64_t outer, int64_t r, int64_t inner, F&& f) {
  const int64_t gtid = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t nthreads = int64_t(blockDim.x) * gridDim.x;
  if (inner == 1 && r >= 32) {
    for (int64_t u = gtid >> 5; u < outer; u += nthreads >> 5)
      f(Line{u * r, 1, r, static_cast<int>(threadIdx.x & 31), 32}, u);
    return;
  }
  for (int64_t u = gtid; u < outer * inner; u += nthreads) {
    const int64_t o = u / inner, i = u - o * inner;
    f(Line{o * r * inner + i, inner, r, 0, 1}, u);
  }
}
unsigned line_blocks(int64_t outer, int64_t r, int64_t inner) {
  return blocks(inner == 1 && r >= 32 ? outer * 32 : outer * inner);
}

// mean[u] = Σ x / r, out[u] = Σ (x - mean)² / denom, both sums in double.
template <typename T>
__global__ void var_kernel(T* out, double* mean, const T* x, int64_t outer, int64_t r,
                           int64_t inner, double denom) {
  for_lines(outer, r, inner, [&](const Line& l, int64_t u) {
    double s = 0;
    l.each([&](int64_t j) { s += static_cast<double>(x[j]); });
    const double mu = l.sum(s) / static_cast<double>(r);
    double q = 0;
    l.each([&](int64_t j) {
      const double d = static_cast<double>(x[j]) - mu;
      q += d * d;
    });
    q = l.sum(q);
    if (l.lane == 0) {
      mean[u] = mu;
      out[u] = static_cast<T>(q / denom);
    }
  });
}

// dx = dout[u] / ties where x equals m[u], else 0 (the share in double, rounded once, as the CPU).
template <typename T>
__global__ void extreme_backward_kernel(T* dx, const T* dout, const T* x, const T* m, int64_t outer,
                                        int64_t r, int64_t inner) {
  for_lines(outer, r, inner, [&](const Line& l, int64_t u) {
    const T mu = m[u];
    double ties = 0;  // exact: counts below 2^53
    l.each([&](int64_t j) { ties += x[j] == mu ? 1.0 : 0.0; });
    ties = l.sum(ties);
    const T w = static_cast<T>(static_cast<double>(dout[u]) * (1.0 / ties));
    l.each([&](int64_t j) { dx[j] = x[j] == mu ? w : T(0); });
  });
}

// ---- argmax ----
// The CPU's scan (ops/reduce/reduce.cpp): the best so far b is replaced by v when b is not NaN and
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

using detail::F32Scratch;
using detail::is_reduced;

void reduce_sum(DT dt, void* out, const void* x, int64_t outer, int64_t r, int64_t inner,
                double divisor) {
  if (is_reduced(dt)) {  // cuda/reduced.cuh: the float32 kernel, rounded once
    F32Scratch xf(dt, x, outer * r * inner), o(outer * inner);
    reduce_sum(DT::F32, o.get(), xf.get(), outer, r, inner, divisor);
    return o.store(dt, out);
  }
  dispatch_numeric(dt, "reduce_sum", [&](auto tag) {
    using T = decltype(tag);
    if (outer * inner == 0) return;
    reduce_typed<RedOp::Sum, T>(out, x, outer, r, inner, std::is_integral_v<T> ? 1.0 : divisor);
  });
}

void reduce_sum_backward(DT dt, void* dx, const void* dout, int64_t outer, int64_t r, int64_t inner,
                         double scale) {
  if (is_reduced(dt)) {
    F32Scratch g(dt, dout, outer * inner), d(outer * r * inner);
    reduce_sum_backward(DT::F32, d.get(), g.get(), outer, r, inner, scale);
    return d.store(dt, dx);
  }
  const int64_t total = outer * r * inner;
  if (total == 0) return;
  TG_DISPATCH_FLOAT(dt, "reduce_sum_backward", [&] {
    sum_backward_kernel<scalar_t><<<blocks(total), kThreads, 0, detail::cur_stream()>>>(
        static_cast<scalar_t*>(dx), static_cast<const scalar_t*>(dout), total, r, inner, scale);
  });
  TG_CUDA_LAUNCH_CHECK("reduce_sum_backward");
}

void reduce_extreme(RedOp op, DT dt, void* out, const void* x, int64_t outer, int64_t r,
                    int64_t inner) {
  if (is_reduced(dt)) {
    F32Scratch xf(dt, x, outer * r * inner), o(outer * inner);
    reduce_extreme(op, DT::F32, o.get(), xf.get(), outer, r, inner);
    return o.store(dt, out);
  }
  dispatch_numeric(dt, "reduce_extreme", [&](auto tag) {
    using T = decltype(tag);
    if (outer * inner == 0) return;
    if (op == RedOp::Max) return reduce_typed<RedOp::Max, T>(out, x, outer, r, inner);
    if (op == RedOp::Min) return reduce_typed<RedOp::Min, T>(out, x, outer, r, inner);
    throw Error("reduce_extreme: op " + std::to_string(static_cast<int>(op)) +
                " is not Max or Min");
  });
}

void reduce_extreme_backward(DT dt, void* dx, const void* dout, const void* x, const void* m,
                             int64_t outer, int64_t r, int64_t inner) {
  if (is_reduced(dt)) {
    F32Scratch g(dt, dout, outer * inner), xf(dt, x, outer * r * inner), mf(dt, m, outer * inner),
        d(outer * r * inner);
    reduce_extreme_backward(DT::F32, d.get(), g.get(), xf.get(), mf.get(), outer, r, inner);
    return d.store(dt, dx);
  }
  if (outer * r * inner == 0) return;
  TG_DISPATCH_FLOAT(dt, "reduce_extreme_backward", [&] {
    extreme_backward_kernel<scalar_t>
        <<<line_blocks(outer, r, inner), kThreads, 0, detail::cur_stream()>>>(
            static_cast<scalar_t*>(dx), static_cast<const scalar_t*>(dout),
            static_cast<const scalar_t*>(x), static_cast<const scalar_t*>(m), outer, r, inner);
  });
  TG_CUDA_LAUNCH_CHECK("reduce_extreme_backward");
}

void reduce_var(DT dt, void* out, double* mean, const void* x, int64_t outer, int64_t r,
                int64_t inner, double denom) {
  if (is_reduced(dt)) {
    F32Scratch xf(dt, x, outer * r * inner), o(outer * inner);
    reduce_var(DT::F32, o.get(), mean, xf.get(), outer, r, inner, denom);
    return o.store(dt, out);
  }
  if (outer * inner == 0) return;
  TG_DISPATCH_FLOAT(dt, "reduce_var", [&] {
    var_kernel<scalar_t><<<line_blocks(outer, r, inner), kThreads, 0, detail::cur_stream()>>>(
        static_cast<scalar_t*>(out), mean, static_cast<const scalar_t*>(x), outer, r, inner, denom);
  });
  TG_CUDA_LAUNCH_CHECK("reduce_var");
}

void reduce_var_backward(DT dt, void* dx, const void* dout, const void* x, const double* mean,
                         int64_t outer, int64_t r, int64_t inner, double denom) {
  if (is_reduced(dt)) {
    F32Scratch g(dt, dout, outer * inner), xf(dt, x, outer * r * inner), d(outer * r * inner);
    reduce_var_backward(DT::F32, d.get(), g.get(), xf.get(), mean, outer, r, inner, denom);
    return d.store(dt, dx);
  }
  const int64_t total = outer * r * inner;
  if (total == 0) return;
  TG_DISPATCH_FLOAT(dt, "reduce_var_backward", [&] {
    var_backward_kernel<scalar_t><<<blocks(total), kThreads, 0, detail::cur_stream()>>>(
        static_cast<scalar_t*>(dx), static_cast<const scalar_t*>(dout),
        static_cast<const scalar_t*>(x), mean, total, r, inner, denom);
  });
  TG_CUDA_LAUNCH_CHECK("reduce_var_backward");
}

// out (outer, inner) int64 = first index of the maximum of x (outer, r, inner) along r.
void argmax(DT dt, int64_t* out, const void* x, int64_t outer, int64_t r, int64_t inner) {
  if (is_reduced(dt)) {  // float32 holds every reduced value: the same order
    F32Scratch xf(dt, x, outer * r * inner);
    return argmax(DT::F32, out, xf.get(), outer, r, inner);
  }
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
  if (is_reduced(dt)) {
    F32Scratch xf(dt, x, n);
    return sum_squares(DT::F32, acc, xf.get(), n);
  }
  if (n == 0) return;
  const unsigned grid = std::min<unsigned>(blocks(n), 1024);  // at most 1024 atomics
  TG_DISPATCH_FLOAT(dt, "sum_squares", [&] {
    sum_squares_kernel<scalar_t>
        <<<grid, kThreads, 0, detail::cur_stream()>>>(acc, static_cast<const scalar_t*>(x), n);
  });
  TG_CUDA_LAUNCH_CHECK("sum_squares");
}

}  // namespace tg::cuda
