// cuda/copy.cu — the memory-shaped kernels of kernels.cuh: fill, cast, the strided gather copy
// (transpose, permute, expand, narrow/slice, each input of cat), index_select and its adjoint
// index_add (atomics, or a deterministic sort-then-segment-sum), and the index range check.
// CPU twins: autograd/tensor.cpp (fill_with, convert_tensor), ops/shape/views.cpp (gather,
// index_select and its backward), ops/index/embedding.cpp. Deliberately not here: elementwise math
// (elementwise.cu), reductions (reduce.cu).
//
// GPU run, check first: (1) index_add deterministic == the CPU bit for bit (F32, repeated
// indices, outer > 1, inner 1 and inner 768) and == the atomic path up to rounding; (2)
// strided_copy of a transpose and of a narrow with a non-zero offset; (3) cast F32 -> Bool of
// NaN and -0.0 (true, false) and F64 -> I64 truncation; (4) first_out_of_range with the bad
// index at position 0, at n-1, and none.
#include "cuda/check.cuh"
#include "cuda/reduced.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <cstring>
#include <string>
#include <type_traits>

namespace tg::cuda {
namespace {
using detail::blocks_for;  // of kThreads
using detail::DeviceBuffer;

constexpr int kThreads = detail::kBlockThreads;

// ---- fill, cast ----
// A reduced type rounds through float32 (cuda/half.cuh), as the CPU's fill does.
template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  return round_to<T>(v);
}

template <typename T>
__global__ void fill_kernel(T* out, int64_t n, T v) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i] = v;
}

// static_cast, except that to bool means != 0 (NaN -> true), as in convert_tensor; a reduced type
// is read as float (exact) and written rounded once (through float32 from float64 or int64, as
// autograd/convert.hpp does).
template <typename To, typename From>
__device__ __forceinline__ To convert(From x) {
  const compute_t<From> v = widen(x);
  if constexpr (std::is_same_v<To, bool>)
    return v != compute_t<From>(0);
  else if constexpr (kReduced<To> && std::is_same_v<From, bool>)
    return round_to<To>(v ? 1.0f : 0.0f);
  else
    return round_to<To>(v);
}

template <typename To, typename From>
__global__ void cast_kernel(To* out, const From* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i] = convert<To>(x[i]);
}

size_t dt_size(DT dt) {
  return dt == DT::F32 ? 4 : dt == DT::Bool ? 1 : (dt == DT::BF16 || dt == DT::F16) ? 2 : 8;
}

// ---- strided copy ----
// out and x over one index space, with size-1 dims dropped and dims merged where both are
// contiguous across them (cuda/elementwise.cu has the same walk for three and four operands).
struct Geo2 {
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t stride[2][kMaxDims] = {};
};

Geo2 collapse2(const Strided& st) {
  Geo2 g;
  for (int d = 0; d < st.ndim; ++d) {
    if (st.shape[d] == 1) continue;
    const int p = g.ndim - 1;
    if (p >= 0 && g.stride[0][p] == st.stride[0][d] * st.shape[d] &&
        g.stride[1][p] == st.stride[1][d] * st.shape[d]) {
      g.shape[p] *= st.shape[d];
      g.stride[0][p] = st.stride[0][d];
      g.stride[1][p] = st.stride[1][d];
      continue;
    }
    g.shape[g.ndim] = st.shape[d];
    g.stride[0][g.ndim] = st.stride[0][d];
    g.stride[1][g.ndim] = st.stride[1][d];
    ++g.ndim;
  }
  return g;
}

// Moves elements by size (uint8_t, uint32_t, uint64_t): a copy needs no arithmetic. I is
// uint32_t when n < 2^31 (cheaper division), else int64_t.
template <typename E, typename I>
__global__ void strided_copy_kernel(E* out, const E* x, Geo2 g, I n) {
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < n; i += I(blockDim.x) * gridDim.x) {
    I rest = i;
    int64_t oo = 0, ox = 0;
#pragma unroll
    for (int d = kMaxDims - 1; d > 0; --d) {
      if (d < g.ndim) {
        const I s = static_cast<I>(g.shape[d]);
        const I q = rest / s;
        const int64_t r = static_cast<int64_t>(rest - q * s);
        oo += r * g.stride[0][d];
        ox += r * g.stride[1][d];
        rest = q;
      }
    }
    if (g.ndim > 0) {
      oo += static_cast<int64_t>(rest) * g.stride[0][0];
      ox += static_cast<int64_t>(rest) * g.stride[1][0];
    }
    out[oo] = x[ox];
  }
}

template <typename E>
void launch_strided_copy(void* out_v, const void* x_v, const Strided& st) {
  int64_t n = 1;
  for (int d = 0; d < st.ndim; ++d) n *= st.shape[d];
  if (n == 0) return;
  E* out = static_cast<E*>(out_v) + st.offset[0];
  const E* x = static_cast<const E*>(x_v) + st.offset[1];
  const Geo2 g = collapse2(st);
  if (g.ndim == 0 || (g.ndim == 1 && g.stride[0][0] == 1 && g.stride[1][0] == 1)) {
    copy_on_device(out, x, static_cast<size_t>(n) * sizeof(E), current_device());
    return;
  }
  cudaStream_t s = detail::cur_stream();
  if (n < (int64_t(1) << 31))
    strided_copy_kernel<E, uint32_t>
        <<<blocks_for(n), kThreads, 0, s>>>(out, x, g, static_cast<uint32_t>(n));
  else
    strided_copy_kernel<E, int64_t><<<blocks_for(n), kThreads, 0, s>>>(out, x, g, n);
  TG_CUDA_LAUNCH_CHECK("strided_copy");
}

// ---- index_select, index_add ----
// Position t of an (outer, n_idx, inner) tensor as (o, k, c).
template <typename I>
struct Pos3 {
  I o, k, c;
};
template <typename I>
__device__ __forceinline__ Pos3<I> split3(I t, I n_idx, I inner) {
  const I row = t / inner;
  const I o = row / n_idx;
  return {o, row - o * n_idx, t - row * inner};
}

// out (outer, n_idx, inner) = x (outer, n_src, inner) at idx[k] along the middle dim.
template <typename E, typename I>
__global__ void index_select_kernel(E* out, const E* x, const int64_t* idx, int64_t n_src, I n_idx,
                                    I inner, I total) {
  for (I t = blockIdx.x * I(blockDim.x) + threadIdx.x; t < total; t += I(blockDim.x) * gridDim.x) {
    const Pos3<I> p = split3(t, n_idx, inner);
    out[t] = x[(static_cast<int64_t>(p.o) * n_src + idx[p.k]) * inner + p.c];
  }
}

// dx (outer, n_src, inner) += g (outer, n_idx, inner) at idx[k], in whatever order the atomics
// land.
template <typename T, typename I>
__global__ void index_add_atomic_kernel(T* dx, const T* g, const int64_t* idx, int64_t n_src,
                                        I n_idx, I inner, I total) {
  for (I t = blockIdx.x * I(blockDim.x) + threadIdx.x; t < total; t += I(blockDim.x) * gridDim.x) {
    const Pos3<I> p = split3(t, n_idx, inner);
    atomicAdd(dx + (static_cast<int64_t>(p.o) * n_src + idx[p.k]) * inner + p.c, g[t]);
  }
}

// Deterministic index_add over the positions sorted by index (keys ascending, pos ascending
// within equal keys): the thread of the first position k of each run of equal keys adds the
// run's g rows into its dx element in position order, so each dx element is summed in the
// CPU's order (ops/shape/views.cpp: for k ascending, dst += src), with no races.
template <typename T, typename I>
__global__ void index_add_sorted_kernel(T* dx, const T* g, const uint64_t* keys, const int64_t* pos,
                                        int64_t n_src, I n_idx, I inner, I total) {
  for (I t = blockIdx.x * I(blockDim.x) + threadIdx.x; t < total; t += I(blockDim.x) * gridDim.x) {
    const Pos3<I> p = split3(t, n_idx, inner);
    const uint64_t key = keys[p.k];
    if (p.k > 0 && keys[p.k - 1] == key) continue;  // not the head of its run
    T* dst = dx + (static_cast<int64_t>(p.o) * n_src + static_cast<int64_t>(key)) * inner + p.c;
    const T* grow = g + static_cast<int64_t>(p.o) * n_idx * inner + p.c;
    T acc = *dst;
    for (I k = p.k; k < n_idx && keys[k] == key; ++k) acc += grow[pos[k] * inner];
    *dst = acc;
  }
}

__global__ void iota_kernel(int64_t* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i] = i;
}

// Calls body(I{}) with I = uint32_t when every index below total fits in 31 bits, else int64_t.
template <typename F>
void with_index_type(int64_t total, F&& body) {
  if (total < (int64_t(1) << 31))
    body(uint32_t{});
  else
    body(int64_t{});
}

template <typename T>
void index_add_deterministic(T* dx, const T* g, const int64_t* idx, int64_t outer, int64_t n_src,
                             int64_t n_idx, int64_t inner) {
  cudaStream_t s = detail::cur_stream();
  // Sort (idx, position) pairs by idx; LSD radix sort is stable, so equal indices keep their
  // positions in ascending order. Only the bits that [0, n_src) needs are sorted.
  int end_bit = 1;
  while (end_bit < 64 && (uint64_t(1) << end_bit) < static_cast<uint64_t>(n_src)) ++end_bit;
  const size_t n_bytes = static_cast<size_t>(n_idx) * sizeof(int64_t);
  DeviceBuffer keys(n_bytes), pos_in(n_bytes), pos(n_bytes);
  iota_kernel<<<blocks_for(n_idx), kThreads, 0, s>>>(pos_in.as<int64_t>(), n_idx);
  TG_CUDA_LAUNCH_CHECK("index_add iota");
  // idx values lie in [0, n_src): the same bits read as uint64_t.
  const uint64_t* keys_in = reinterpret_cast<const uint64_t*>(idx);
  size_t temp_bytes = 0;
  TG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in, keys.as<uint64_t>(),
                                                pos_in.as<int64_t>(), pos.as<int64_t>(), n_idx, 0,
                                                end_bit, s));
  DeviceBuffer temp(temp_bytes);
  TG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.as<void>(), temp_bytes, keys_in,
                                                keys.as<uint64_t>(), pos_in.as<int64_t>(),
                                                pos.as<int64_t>(), n_idx, 0, end_bit, s));
  const int64_t total = outer * n_idx * inner;
  with_index_type(total, [&](auto tag) {
    using I = decltype(tag);
    index_add_sorted_kernel<T, I><<<blocks_for(total), kThreads, 0, s>>>(
        dx, g, keys.as<uint64_t>(), pos.as<int64_t>(), n_src, static_cast<I>(n_idx),
        static_cast<I>(inner), static_cast<I>(total));
  });
  TG_CUDA_LAUNCH_CHECK("index_add");
}

// ---- first_out_of_range ----
// *first = min over k with idx[k] outside [lo, hi); *first starts at ~0 (none). Each thread
// visits its k in ascending order, so its first hit is its smallest.
__global__ void first_out_of_range_kernel(unsigned long long* first, const int64_t* idx, int64_t n,
                                          int64_t lo, int64_t hi) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n;
       k += int64_t(blockDim.x) * gridDim.x) {
    if (idx[k] < lo || idx[k] >= hi) {
      atomicMin(first, static_cast<unsigned long long>(k));
      return;
    }
  }
}

}  // namespace

// out (n) = value converted to dt.
void fill(DT dt, void* out, int64_t n, double value) {
  if (n == 0) return;
  TG_DISPATCH_ALL(dt, "fill", [&] {
    fill_kernel<scalar_t><<<blocks_for(n), kThreads, 0, detail::cur_stream()>>>(
        static_cast<scalar_t*>(out), n, from_double<scalar_t>(value));
  });
  TG_CUDA_LAUNCH_CHECK("fill");
}

// out (n) of type `to` = x (n) of type `from` converted.
void cast(DT from, DT to, void* out, const void* x, int64_t n) {
  if (n == 0) return;
  if (from == to) {
    copy_on_device(out, x, static_cast<size_t>(n) * dt_size(from), current_device());
    return;
  }
  TG_DISPATCH_ALL(from, "cast", [&] {
    using From = scalar_t;
    TG_DISPATCH_ALL(to, "cast", [&] {
      cast_kernel<scalar_t, From><<<blocks_for(n), kThreads, 0, detail::cur_stream()>>>(
          static_cast<scalar_t*>(out), static_cast<const From*>(x), n);
    });
  });
  TG_CUDA_LAUNCH_CHECK("cast");
}

// out (st, operand 0) = x (st, operand 1), same dtype.
void strided_copy(DT dt, void* out, const void* x, const Strided& st) {
  switch (dt_size(dt)) {
    case 1:
      return launch_strided_copy<uint8_t>(out, x, st);
    case 2:
      return launch_strided_copy<uint16_t>(out, x, st);
    case 4:
      return launch_strided_copy<uint32_t>(out, x, st);
    default:
      return launch_strided_copy<uint64_t>(out, x, st);
  }
}

// out (outer, n_idx, inner) = x (outer, n_src, inner) picked at idx (n_idx).
void index_select(DT dt, void* out, const void* x, const int64_t* idx, int64_t outer, int64_t n_src,
                  int64_t n_idx, int64_t inner) {
  const int64_t total = outer * n_idx * inner;
  if (total == 0) return;
  auto launch = [&](auto etag) {
    using E = decltype(etag);
    with_index_type(total, [&](auto itag) {
      using I = decltype(itag);
      index_select_kernel<E, I><<<blocks_for(total), kThreads, 0, detail::cur_stream()>>>(
          static_cast<E*>(out), static_cast<const E*>(x), idx, n_src, static_cast<I>(n_idx),
          static_cast<I>(inner), static_cast<I>(total));
    });
  };
  switch (dt_size(dt)) {
    case 1:
      launch(uint8_t{});
      break;
    case 2:
      launch(uint16_t{});
      break;
    case 4:
      launch(uint32_t{});
      break;
    default:
      launch(uint64_t{});
      break;
  }
  TG_CUDA_LAUNCH_CHECK("index_select");
}

// dx (outer, n_src, inner) += g (outer, n_idx, inner) at idx (n_idx); dx zeroed by the caller.
void index_add(DT dt, void* dx, const void* g, const int64_t* idx, int64_t outer, int64_t n_src,
               int64_t n_idx, int64_t inner, bool deterministic) {
  if (detail::is_reduced(dt)) {  // summed in float32 into dx's widened values, rounded once
    detail::F32Scratch d(dt, dx, outer * n_src * inner), gf(dt, g, outer * n_idx * inner);
    index_add(DT::F32, d.get(), gf.get(), idx, outer, n_src, n_idx, inner, deterministic);
    return d.store(dt, dx);
  }
  const int64_t total = outer * n_idx * inner;
  if (total == 0) return;
  TG_DISPATCH_FLOAT(dt, "index_add", [&] {
    scalar_t* pd = static_cast<scalar_t*>(dx);
    const scalar_t* pg = static_cast<const scalar_t*>(g);
    if (deterministic) {
      index_add_deterministic(pd, pg, idx, outer, n_src, n_idx, inner);
      return;
    }
    with_index_type(total, [&](auto itag) {
      using I = decltype(itag);
      index_add_atomic_kernel<scalar_t, I>
          <<<blocks_for(total), kThreads, 0, detail::cur_stream()>>>(
              pd, pg, idx, n_src, static_cast<I>(n_idx), static_cast<I>(inner),
              static_cast<I>(total));
    });
    TG_CUDA_LAUNCH_CHECK("index_add");
  });
}

// The first k with idx[k] (n) outside [lo, hi), or -1; reads one value back (synchronises).
int64_t first_out_of_range(const int64_t* idx, int64_t n, int64_t lo, int64_t hi) {
  if (n == 0) return -1;
  cudaStream_t s = detail::cur_stream();
  DeviceBuffer first(sizeof(unsigned long long));
  TG_CUDA_CHECK(cudaMemsetAsync(first.as<void>(), 0xff, sizeof(unsigned long long), s));
  first_out_of_range_kernel<<<blocks_for(n), kThreads, 0, s>>>(first.as<unsigned long long>(), idx,
                                                               n, lo, hi);
  TG_CUDA_LAUNCH_CHECK("first_out_of_range");
  unsigned long long host = 0;
  copy_to_host(&host, first.as<void>(), sizeof host, current_device());
  return host == ~0ULL ? -1 : static_cast<int64_t>(host);
}

}  // namespace tg::cuda
