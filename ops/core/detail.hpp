// ops/core/detail.hpp — internal helpers shared by the op families (not installed): argument checks
// that produce our error messages, dtype dispatch, dim normalisation, the parallel loop and
// broadcast strides. Deliberately no xtensor and no kernels here: they live in ops/<family>/cpu/.
#pragma once

#include <functional>
#include <initializer_list>

#include "autograd/tape.hpp"
#include "autograd/tensor.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace tg::detail {

// ---- checks: each throws tg::Error naming op, argument and shape ----
inline void check_defined(const Tensor& t, const char* op, const char* arg) {
  if (!t.defined()) throw Error(fmt::format("{}: {} is undefined", op, arg));
}
inline void check_cpu(const Tensor& t, const char* op, const char* arg) {
  if (t.device().type != DeviceType::CPU)
    throw Error(fmt::format("{}: {} {} is on {}, expected cpu", op, arg, shape_str(t.shape()),
                            t.device().str()));
}
// Defined, floating point and on the CPU (any_device: or on a CUDA device, for ops with a CUDA
// branch).
inline void check_float(const Tensor& t, const char* op, const char* arg, bool any_device = false) {
  check_defined(t, op, arg);
  if (!any_device) check_cpu(t, op, arg);
  if (!is_floating(t.dtype()))
    throw Error(fmt::format("{}: {} {} has dtype {}, expected float32 or float64", op, arg,
                            shape_str(t.shape()), dtype_name(t.dtype())));
}
inline void check_dtype(const Tensor& t, DType want, const char* op, const char* arg,
                        bool any_device = false) {
  check_defined(t, op, arg);
  if (!any_device) check_cpu(t, op, arg);
  if (t.dtype() != want)
    throw Error(fmt::format("{}: {} {} has dtype {}, expected {}", op, arg, shape_str(t.shape()),
                            dtype_name(t.dtype()), dtype_name(want)));
}
inline void check_same_dtype(const Tensor& a, const Tensor& b, const char* op, const char* an,
                             const char* bn) {
  if (a.dtype() != b.dtype())
    throw Error(fmt::format("{}: {} {} is {} but {} {} is {}; convert one with .to()", op, an,
                            shape_str(a.shape()), dtype_name(a.dtype()), bn, shape_str(b.shape()),
                            dtype_name(b.dtype())));
}
// The product of shape[b, e): the outer or inner extent around a dim.
inline int64_t span(const Shape& s, int64_t b, int64_t e) {
  int64_t p = 1;
  for (int64_t d = b; d < e; ++d) p *= s[d];
  return p;
}
// A list of ints as errors print it: [1,2,3].
inline std::string list_str(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ","));
}
// Normalises a possibly negative dim against rank n.
inline int64_t norm_dim(int64_t d, int64_t n, const char* op, const Shape& shape) {
  int64_t r = d < 0 ? d + n : d;
  if (r < 0 || r >= n)
    throw Error(fmt::format("{}: dim {} out of range for a tensor of shape {} (rank {})", op, d,
                            shape_str(shape), n));
  return r;
}

// ---- dtype dispatch: calls f(T{}) with T = float or double ----
template <typename F>
decltype(auto) dispatch_float(DType t, const char* op, F&& f) {
  switch (t) {
    case kFloat32:
      return f(float{});
    case kFloat64:
      return f(double{});
    default:
      throw Error(fmt::format("{}: unsupported dtype {}", op, dtype_name(t)));
  }
}
// Any dtype but the reduced ones: float, double, int64_t, bool (bfloat16 / float16 kernels load
// float32 through autograd/convert.hpp instead; an op without them says so).
template <typename F>
decltype(auto) dispatch_all(DType t, const char* op, F&& f) {
  switch (t) {
    case kFloat32:
      return f(float{});
    case kFloat64:
      return f(double{});
    case kInt64:
      return f(int64_t{});
    case kBool:
      return f(bool{});
    default:
      throw Error(fmt::format("{}: unsupported dtype {}", op, dtype_name(t)));
  }
}
// Data movement only (copies, gathers of whole elements): an unsigned type of the dtype's size.
template <typename F>
decltype(auto) dispatch_bits(DType t, F&& f) {
  switch (dtype_size(t)) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    default:
      return f(uint64_t{});
  }
}

// ---- op entry: kernels read row-major memory ----
// t itself when contiguous (or undefined), else t.contiguous(): a recorded copy, so the op can
// record its own node on the copy and the gradient still reaches the view. Ops start with
//   const Tensor x = contig(x_in);
inline Tensor contig(const Tensor& t) {
  return !t.defined() || t.is_contiguous() ? t : t.contiguous();
}
// For kernels on the hot path (elementwise): t itself when contiguous (no handle copy), else an
// unrecorded row-major copy kept alive in `hold`.
inline const Tensor& dense_ref(const Tensor& t, Tensor& hold) {
  if (!t.defined() || t.is_contiguous()) return t;
  hold = dense_copy(t);
  return hold;
}

// ---- views (ops/shape/views.cpp) ----
// Do these strides lay `shape` out row-major (ignoring size-1 dims; always for no elements)?
bool is_row_major(const Shape& shape, const Shape& strides);
// A view of x's storage with its own shape, strides and offset (elements), not recorded; empty
// strides mean row-major.
Tensor make_view(const Tensor& x, const Shape& shape, const Shape& strides, int64_t offset);
// dx = 0 of shape in_shape (row-major) with dx[offset + Σ idx[d]·st[d]] = g[idx]: the adjoint of
// a view that shows distinct elements (not recorded).
// Recorded when g requires grad (only under create_graph), with the gather as its backward.
Tensor view_scatter(const Tensor& g, const Shape& in_shape, const Shape& st, int64_t offset);
// view_scatter's adjoint: the elements of x (row-major) at offset + Σ idx·st as a dense tensor
// of `shape`, recorded (its backward is view_scatter).
Tensor view_gather(const Tensor& x, const Shape& shape, const Shape& st, int64_t offset);
// For create_graph, the backward of an op that is linear in its input (a gather, a copy, an
// embedding lookup): dx = adjointᵀ(g), computed by the raw kernel, is recorded as `op` with input
// g when g requires grad (only under create_graph), and its own backward is the forward op again
// (forward_again), so it differentiates to any order. Otherwise dx itself.
Tensor record_adjoint(const char* op, Tensor dx, const Tensor& g,
                      std::function<Tensor(const Tensor&)> forward_again);

// ---- parallel loops ----
// Work (elements touched) below which a loop stays serial: starting a parallel region costs more.
constexpr int64_t kParallelMin = 1 << 15;
// Calls f(i) for i in [0, n), in parallel (OpenMP, tg::set_num_threads) when `work` is large.
// The branch sits outside the pragma: `#pragma omp parallel for if(false)` still enters the
// OpenMP runtime on every call. Never call BLAS from f (one pool at a time).
template <typename F>
void parallel_for(int64_t n, int64_t work, F&& f) {
  if (work >= kParallelMin && n > 1 && get_num_threads() > 1) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) f(i);
  } else {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
}

// ---- broadcasting ----
// Strides of `in` (contiguous) seen through the broadcast `out` shape: 0 where broadcast.
inline Shape broadcast_strides(const Shape& in, const Shape& out) {
  Shape st(out.size(), 0);
  Shape cs = contiguous_strides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[off + i] = in[i] == 1 ? 0 : cs[i];
  return st;
}

// scatter's shape rules, shared by scatter_add, scatter and scatter_reduce (ops/index/gather.cpp):
// index and src of x's ndim, index within src everywhere and within x off dim, index values in
// range (read on the host). Returns dim normalised; errors name op and every shape.
int64_t scatter_shapes(const char* op, const Tensor& x, int64_t dim, const Tensor& index,
                       const Tensor& src);

// The in-place machinery of ops/inplace/inplace.cpp, for ops of other families that write in place.
// Writes compute(x's values) into x as `op`, with every in-place check and the autograd
// rebase (recorded: compute gets a clone of x and must return x's shape).
Tensor inplace_update(const char* op, const Tensor& x, std::initializer_list<const Tensor*> others,
                      const std::function<Tensor(const Tensor&)>& compute);
// copy_(x, src) named `op` in its errors.
Tensor copy_named(const char* op, const Tensor& x, const Tensor& src);
// Does some memory location hold more than one element of a view of this shape and strides?
bool has_internal_overlap(const Shape& shape, const Shape& strides);

}  // namespace tg::detail
