// cuda/elementwise.cu — the elementwise kernels of kernels.cuh: binary ops with broadcasting
// (arithmetic, maximum/minimum, comparisons), the unary ops and their derivatives, where
// (masked_fill is where with a one-element a) and logical_not. The CPU twins are
// ops/binary/elementwise.cpp and ops/binary/where.cpp. Deliberately not here: copies and casts
// (copy.cu), reductions such as sum_to (reduce.cu).
//
// Numerics, mirroring the CPU: binary ops compute in the element type (float32 stays float32,
// powf for float); unary ops and their derivatives are their formulas (ops/kern/unary_formulas.hpp,
// the CPU's own) computed in double and rounded once to dt.
//
// GPU run, check first: (1) the strided path (broadcast bias add (N, C) + (C), a transposed
// operand, a non-zero st.offset) against the CPU; (2) maximum/minimum with NaN on either side;
// (3) Int64 Add/Mul and Bool Eq through the broadcast path; (4) GeluErf/GeluTanh backward
// F32 against the float64 reference.
#include "cuda/check.cuh"
#include "ops/kern/unary_formulas.hpp"

#include <cmath>
#include <string>
#include <type_traits>

namespace tg::cuda {
namespace {

constexpr int kThreads = detail::kBlockThreads;
using detail::blocks_for;  // of kThreads

// ---- N-d index geometry ----
// K operands over one index space, with size-1 dims dropped and dims merged wherever every
// operand is contiguous across them (a contiguous tensor becomes one dim).
template <int K>
struct Geo {
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t stride[K][kMaxDims] = {};
};

template <int K>
Geo<K> collapse(int ndim, const int64_t* shape, const int64_t* const (&strides)[K]) {
  Geo<K> g;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 1) continue;
    if (g.ndim > 0) {
      const int p = g.ndim - 1;
      bool merge = true;
      for (int k = 0; k < K; ++k) merge = merge && g.stride[k][p] == strides[k][d] * shape[d];
      if (merge) {
        g.shape[p] *= shape[d];
        for (int k = 0; k < K; ++k) g.stride[k][p] = strides[k][d];
        continue;
      }
    }
    g.shape[g.ndim] = shape[d];
    for (int k = 0; k < K; ++k) g.stride[k][g.ndim] = strides[k][d];
    ++g.ndim;
  }
  return g;
}

// True when every operand walks memory with stride 1 (or the space is one element).
template <int K>
bool all_unit(const Geo<K>& g) {
  if (g.ndim == 0) return true;
  if (g.ndim > 1) return false;
  for (int k = 0; k < K; ++k)
    if (g.stride[k][0] != 1) return false;
  return true;
}

int64_t numel(int ndim, const int64_t* shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= shape[d];
  return n;
}

// Element offsets of linear index i (row-major over g.shape) for each operand. I is uint32_t
// when the space has < 2^31 elements (cheaper division), else int64_t.
template <int K, typename I>
__device__ __forceinline__ void offsets(const Geo<K>& g, I i, int64_t (&off)[K]) {
#pragma unroll
  for (int k = 0; k < K; ++k) off[k] = 0;
#pragma unroll
  for (int d = kMaxDims - 1; d > 0; --d) {
    if (d < g.ndim) {
      const I s = static_cast<I>(g.shape[d]);
      const I q = i / s;
      const int64_t r = static_cast<int64_t>(i - q * s);
#pragma unroll
      for (int k = 0; k < K; ++k) off[k] += r * g.stride[k][d];
      i = q;
    }
  }
  if (g.ndim > 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] += static_cast<int64_t>(i) * g.stride[k][0];
  }
}

// ---- binary ops ----
__device__ __forceinline__ float dev_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double dev_pow(double x, double y) { return pow(x, y); }

// One functor per op: f(x, y) in the element type T.
#define TG_BINARY_FUNCTOR(Name, R, expr)      \
  struct Name {                               \
    template <typename T>                     \
    __device__ R operator()(T x, T y) const { \
      return expr;                            \
    }                                         \
  };
TG_BINARY_FUNCTOR(AddF, T, x + y)
TG_BINARY_FUNCTOR(SubF, T, x - y)
TG_BINARY_FUNCTOR(MulF, T, (x * y))
TG_BINARY_FUNCTOR(DivF, T, x / y)
TG_BINARY_FUNCTOR(PowF, T, dev_pow(x, y))
// maximum/minimum: NaN on either side propagates (x + y is NaN), like the CPU and torch.
TG_BINARY_FUNCTOR(MaxF, T, (x != x || y != y) ? T(x + y) : (x > y ? x : y))
TG_BINARY_FUNCTOR(MinF, T, (x != x || y != y) ? T(x + y) : (x < y ? x : y))
TG_BINARY_FUNCTOR(EqF, bool, x == y)
TG_BINARY_FUNCTOR(NeF, bool, x != y)
TG_BINARY_FUNCTOR(LtF, bool, x < y)
TG_BINARY_FUNCTOR(LeF, bool, x <= y)
TG_BINARY_FUNCTOR(GtF, bool, x > y)
TG_BINARY_FUNCTOR(GeF, bool, x >= y)
#undef TG_BINARY_FUNCTOR

// out, a, b contiguous over n.
template <typename T, typename O, typename F>
__global__ void binary_contig(O* out, const T* a, const T* b, int64_t n, F f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i] = round_to<O>(f(widen(a[i]), widen(b[i])));
}
// out, a contiguous over n; b one element.
template <typename T, typename O, typename F>
__global__ void binary_scalar_b(O* out, const T* a, const T* b, int64_t n, F f) {
  const compute_t<T> vb = widen(*b);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i] = round_to<O>(f(widen(a[i]), vb));
}
// The general broadcast / strided walk: operand 0 out, 1 a, 2 b.
template <typename T, typename O, typename F, typename I>
__global__ void binary_strided(O* out, const T* a, const T* b, Geo<3> g, I n, F f) {
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < n; i += I(blockDim.x) * gridDim.x) {
    int64_t off[3];
    offsets(g, i, off);
    out[off[0]] = round_to<O>(f(widen(a[off[1]]), widen(b[off[2]])));
  }
}

template <typename T, typename O, typename F>
void launch_binary(F f, void* out_v, const void* a_v, const void* b_v, const Strided& st) {
  const int64_t n = numel(st.ndim, st.shape);
  if (n == 0) return;
  O* out = static_cast<O*>(out_v) + st.offset[0];
  const T* a = static_cast<const T*>(a_v) + st.offset[1];
  const T* b = static_cast<const T*>(b_v) + st.offset[2];
  const Geo<3> g = collapse<3>(st.ndim, st.shape, {st.stride[0], st.stride[1], st.stride[2]});
  cudaStream_t s = detail::cur_stream();
  const unsigned grid = blocks_for(n);
  if (all_unit(g)) {
    binary_contig<T, O, F><<<grid, kThreads, 0, s>>>(out, a, b, n, f);
  } else if (g.ndim == 1 && g.stride[0][0] == 1 && g.stride[1][0] == 1 && g.stride[2][0] == 0) {
    binary_scalar_b<T, O, F><<<grid, kThreads, 0, s>>>(out, a, b, n, f);
  } else if (n < (int64_t(1) << 31)) {
    binary_strided<T, O, F, uint32_t>
        <<<grid, kThreads, 0, s>>>(out, a, b, g, static_cast<uint32_t>(n), f);
  } else {
    binary_strided<T, O, F, int64_t><<<grid, kThreads, 0, s>>>(out, a, b, g, n, f);
  }
  TG_CUDA_LAUNCH_CHECK("binary");
}

const char* binop_name(BinOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum",
                                "eq",  "ne",  "lt",  "le",  "gt",  "ge"};
  return names[static_cast<int>(op)];
}
const char* dt_name(DT dt) {
  static const char* names[] = {"float32", "float64", "int64", "bool", "bfloat16", "float16"};
  return names[static_cast<int>(dt)];
}

template <typename T>
constexpr DT dt_of() {
  if constexpr (std::is_same_v<T, float>) return DT::F32;
  if constexpr (std::is_same_v<T, double>) return DT::F64;
  if constexpr (std::is_same_v<T, int64_t>) return DT::I64;
  if constexpr (std::is_same_v<T, bf16>) return DT::BF16;
  if constexpr (std::is_same_v<T, f16>) return DT::F16;
  return DT::Bool;
}

// Runs op for element type T; returns false for a combination the CPU rejects (arithmetic on
// bool, div/pow on int64, an output dtype other than T for arithmetic or Bool for comparisons).
template <typename T>
bool binary_typed(BinOp op, DT out_dt, void* out, const void* a, const void* b, const Strided& st) {
  constexpr bool kArith = !std::is_same_v<T, bool>;  // add, sub, mul, maximum, minimum
  constexpr bool kFloat = std::is_floating_point_v<T> || kReduced<T>;  // div, pow
  auto run = [&](auto f, auto out_tag) {
    launch_binary<T, decltype(out_tag)>(f, out, a, b, st);
    return true;
  };
  if (op >= BinOp::Eq) {
    if (out_dt != DT::Bool) return false;
    switch (op) {
      case BinOp::Eq:
        return run(EqF{}, bool{});
      case BinOp::Ne:
        return run(NeF{}, bool{});
      case BinOp::Lt:
        return run(LtF{}, bool{});
      case BinOp::Le:
        return run(LeF{}, bool{});
      case BinOp::Gt:
        return run(GtF{}, bool{});
      case BinOp::Ge:
        return run(GeF{}, bool{});
      default:
        return false;
    }
  }
  if (out_dt != dt_of<T>()) return false;
  if constexpr (kArith) {
    switch (op) {
      case BinOp::Add:
        return run(AddF{}, T{});
      case BinOp::Sub:
        return run(SubF{}, T{});
      case BinOp::Mul:
        return run(MulF{}, T{});
      case BinOp::Max:
        return run(MaxF{}, T{});
      case BinOp::Min:
        return run(MinF{}, T{});
      default:
        break;
    }
  }
  if constexpr (kFloat) {
    switch (op) {
      case BinOp::Div:
        return run(DivF{}, T{});
      case BinOp::Pow:
        return run(PowF{}, T{});
      default:
        break;
    }
  }
  return false;
}

// ---- unary ops: each op's Formula (ops/kern/unary_formulas.hpp) in double, rounded once to dt
// ----
template <UnOp OP>
using Formula = kern::uf::Formula<OP>;
template <UnOp OP>
constexpr bool kReadsX = kern::unary_reads_x(OP);
template <UnOp OP>
constexpr bool kReadsY = kern::unary_reads_y(OP);

template <typename T, UnOp OP>
__global__ void unary_kernel(T* out, const T* x, int64_t n, double p0, double p1) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i] = round_to<T>(Formula<OP>::fwd(static_cast<double>(widen(x[i])), p0, p1));
}

// dx[i] = g[i] · f'(x[i]) in double, reading x and/or y as the list says. RDivS reads y when
// given (the CPU's -y/x with y rounded to dt), else recomputes y = p0 / x; Relu reads x, or y when
// x is null (y > 0 iff x > 0).
template <typename T, UnOp OP>
__global__ void unary_backward_kernel(T* dx, const T* g, const T* x, const T* y, int64_t n,
                                      double p0, double p1) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x) {
    double xv = 0, yv = 0;
    if constexpr (OP == UnOp::Relu) {
      xv = static_cast<double>(widen(x ? x[i] : y[i]));
    } else if constexpr (OP == UnOp::RDivS) {
      xv = static_cast<double>(widen(x[i]));
      yv = y ? static_cast<double>(widen(y[i])) : p0 / xv;
    } else {
      if constexpr (kReadsX<OP>) xv = static_cast<double>(widen(x[i]));
      if constexpr (kReadsY<OP>) yv = static_cast<double>(widen(y[i]));
    }
    dx[i] = round_to<T>(Formula<OP>::bwd(static_cast<double>(widen(g[i])), xv, yv, p0, p1));
  }
}

template <UnOp OP>
void launch_unary(DT dt, void* out, const void* x, int64_t n, double p0, double p1) {
  TG_DISPATCH_FLOATING(dt, "unary", [&] {
    unary_kernel<scalar_t, OP><<<blocks_for(n), kThreads, 0, detail::cur_stream()>>>(
        static_cast<scalar_t*>(out), static_cast<const scalar_t*>(x), n, p0, p1);
    TG_CUDA_LAUNCH_CHECK("unary");
  });
}

template <UnOp OP>
void launch_unary_backward(DT dt, void* dx, const void* g, const void* x, const void* y, int64_t n,
                           double p0, double p1) {
  const bool need_x = OP == UnOp::Relu ? (x == nullptr && y == nullptr) : kReadsX<OP> && !x;
  const bool need_y = OP != UnOp::RDivS && kReadsY<OP> && !y;
  if (need_x || need_y)
    throw Error(std::string("unary_backward: op ") + kern::unary_info(OP).name +
                " needs the saved " + (need_x ? "input x" : "output y") + ", got null");
  TG_DISPATCH_FLOATING(dt, "unary_backward", [&] {
    using P = const scalar_t*;
    unary_backward_kernel<scalar_t, OP><<<blocks_for(n), kThreads, 0, detail::cur_stream()>>>(
        static_cast<scalar_t*>(dx), static_cast<P>(g), static_cast<P>(x), static_cast<P>(y), n, p0,
        p1);
    TG_CUDA_LAUNCH_CHECK("unary_backward");
  });
}

// ---- where, logical_not ----
// Copies by element size (where only moves values): uint8_t, uint32_t or uint64_t.
template <typename E>
__global__ void where_contig(E* out, const bool* cond, const E* a, const E* b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i] = cond[i] ? a[i] : b[i];
}
// Operand 0 out, 1 cond, 2 a, 3 b.
template <typename E, typename I>
__global__ void where_strided(E* out, const bool* cond, const E* a, const E* b, Geo<4> g, I n) {
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < n; i += I(blockDim.x) * gridDim.x) {
    int64_t off[4];
    offsets(g, i, off);
    out[off[0]] = cond[off[1]] ? a[off[2]] : b[off[3]];
  }
}

template <typename E>
void launch_where(void* out_v, const bool* cond, const int64_t* cond_stride, int64_t cond_offset,
                  const void* a_v, const void* b_v, const Strided& st) {
  const int64_t n = numel(st.ndim, st.shape);
  if (n == 0) return;
  E* out = static_cast<E*>(out_v) + st.offset[0];
  const E* a = static_cast<const E*>(a_v) + st.offset[1];
  const E* b = static_cast<const E*>(b_v) + st.offset[2];
  cond += cond_offset;
  const Geo<4> g =
      collapse<4>(st.ndim, st.shape, {st.stride[0], cond_stride, st.stride[1], st.stride[2]});
  cudaStream_t s = detail::cur_stream();
  const unsigned grid = blocks_for(n);
  if (all_unit(g))
    where_contig<E><<<grid, kThreads, 0, s>>>(out, cond, a, b, n);
  else if (n < (int64_t(1) << 31))
    where_strided<E, uint32_t>
        <<<grid, kThreads, 0, s>>>(out, cond, a, b, g, static_cast<uint32_t>(n));
  else
    where_strided<E, int64_t><<<grid, kThreads, 0, s>>>(out, cond, a, b, g, n);
  TG_CUDA_LAUNCH_CHECK("where");
}

__global__ void logical_not_kernel(bool* out, const bool* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i] = !x[i];
}

}  // namespace

// out (st, operand 0) = a (operand 1) op b (operand 2); see kernels.cuh.
void binary(BinOp op, DT dt, DT out_dt, void* out, const void* a, const void* b,
            const Strided& st) {
  bool ok = false;
  TG_DISPATCH_ALL(dt, "binary", [&] { ok = binary_typed<scalar_t>(op, out_dt, out, a, b, st); });
  if (!ok)
    throw Error(std::string("binary: ") + binop_name(op) + " is not supported for " + dt_name(dt) +
                " inputs with a " + dt_name(out_dt) + " output on cuda");
}

// out (n) = f(x (n)).
void unary(UnOp op, DT dt, void* out, const void* x, int64_t n, double p0, double p1) {
  if (n == 0) return;
  switch (op) {
#define X(Code, ...) \
  case UnOp::Code:   \
    return launch_unary<UnOp::Code>(dt, out, x, n, p0, p1);
#include "ops/kern/unary_list.inc"
#undef X
  }
  throw Error("unary: unknown op " + std::to_string(static_cast<int>(op)));
}

// dx (n) = g (n) · f'(x (n)), reading x and/or y (n) as the op needs.
void unary_backward(UnOp op, DT dt, void* dx, const void* g, const void* x, const void* y,
                    int64_t n, double p0, double p1) {
  if (n == 0) return;
  switch (op) {
#define X(Code, ...) \
  case UnOp::Code:   \
    return launch_unary_backward<UnOp::Code>(dt, dx, g, x, y, n, p0, p1);
#include "ops/kern/unary_list.inc"
#undef X
  }
  throw Error("unary_backward: unknown op " + std::to_string(static_cast<int>(op)));
}

// out (st) = cond (cond_stride) ? a : b, any dtype.
void where(DT dt, void* out, const bool* cond, const int64_t* cond_stride, int64_t cond_offset,
           const void* a, const void* b, const Strided& st) {
  switch (dt) {
    case DT::F32:
      return launch_where<uint32_t>(out, cond, cond_stride, cond_offset, a, b, st);
    case DT::F64:
    case DT::I64:
      return launch_where<uint64_t>(out, cond, cond_stride, cond_offset, a, b, st);
    case DT::Bool:
      return launch_where<uint8_t>(out, cond, cond_stride, cond_offset, a, b, st);
    case DT::BF16:
    case DT::F16:
      return launch_where<uint16_t>(out, cond, cond_stride, cond_offset, a, b, st);
  }
  throw Error("where: unknown dtype on cuda");
}

// out (n) = !x (n).
void logical_not(bool* out, const bool* x, int64_t n) {
  if (n == 0) return;
  logical_not_kernel<<<blocks_for(n), kThreads, 0, detail::cur_stream()>>>(out, x, n);
  TG_CUDA_LAUNCH_CHECK("logical_not");
}

}  // namespace tg::cuda
