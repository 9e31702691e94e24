// cuda/scatter.cu — scatter and scatter_reduce on the GPU (ops/index/scatter.cpp is the spec, the
// CPU's cpu::scatter_reduce_lines its twin). A target of out is reached only from index positions
// that share every coordinate but dim's, so one thread per such line walks the index along dim in
// order: the last write wins for scatter, as on the CPU, every reduction is deterministic and no
// atomics are needed. Without include_self the thread first resets its line's targets to the
// reduction's identity; mean counts per target in `count` (out-sized, zeroed by the caller).
#include "cuda/check.cuh"
#include "cuda/reduced.cuh"

namespace tg::cuda {

namespace {

constexpr int kThreads = 128;

template <typename scalar_t>
__global__ void scatter_kernel(ScatterOp op, scalar_t* out, const scalar_t* src,
                               const int64_t* index, Strided st, int dim, bool include_self,
                               int64_t* count, int64_t lines) {
  const int64_t n = st.shape[dim];
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; line < lines;
       line += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // the line's coordinates (dim's at 0) -> offsets in out, src and the (contiguous) index
    int64_t rest = line, o = 0, s = 0, e = 0, istride = 1;
    int64_t idx_stride[kMaxDims];
    for (int k = st.ndim - 1; k >= 0; --k) {
      idx_stride[k] = istride;
      istride *= st.shape[k];
    }
    for (int k = st.ndim - 1; k >= 0; --k) {
      if (k == dim) continue;
      const int64_t c = rest % st.shape[k];
      rest /= st.shape[k];
      o += c * st.stride[0][k];
      s += c * st.stride[1][k];
      e += c * idx_stride[k];
    }
    const int64_t od = st.stride[0][dim], sdd = st.stride[1][dim], ed = idx_stride[dim];
    const double inf = static_cast<double>(INFINITY);
    if (!include_self && op != ScatterOp::None)
      for (int64_t t = 0; t < n; ++t) {
        scalar_t& v = out[o + index[e + t * ed] * od];
        v = op == ScatterOp::Prod   ? scalar_t(1)
            : op == ScatterOp::Amax ? static_cast<scalar_t>(-inf)
            : op == ScatterOp::Amin ? static_cast<scalar_t>(inf)
                                    : scalar_t(0);
      }
    for (int64_t t = 0; t < n; ++t) {
      const int64_t at = o + index[e + t * ed] * od;
      scalar_t& v = out[at];
      const scalar_t x = src[s + t * sdd];
      switch (op) {
        case ScatterOp::None:
          v = x;
          break;
        case ScatterOp::Sum:
          v += x;
          break;
        case ScatterOp::Mean:
          v += x, ++count[at];
          break;
        case ScatterOp::Prod:
          v *= x;
          break;
        case ScatterOp::Amax:
          v = isnan(v) || isnan(x) ? static_cast<scalar_t>(NAN) : (v < x ? x : v);  // std::max
          break;
        case ScatterOp::Amin:
          v = isnan(v) || isnan(x) ? static_cast<scalar_t>(NAN) : (x < v ? x : v);  // std::min
          break;
      }
    }
    if (op == ScatterOp::Mean)
      for (int64_t t = 0; t < n; ++t) {  // each target once: the first time the line meets it
        const int64_t at = o + index[e + t * ed] * od;
        const int64_t c = count[at] + (include_self ? 1 : 0);
        if (c > 1 && count[at] > 0) out[at] /= static_cast<scalar_t>(c);
        count[at] = -1;  // done
      }
  }
}

}  // namespace

using detail::F32Scratch;
using detail::is_reduced;

void scatter_reduce(ScatterOp op, DT dt, void* out, const void* src, const int64_t* index,
                    const Strided& st, int dim, bool include_self, int64_t* count,
                    int64_t out_numel) {
  if (is_reduced(dt)) {      // out and src widened, out rounded once (cuda/reduced.cuh)
    int64_t src_extent = 1;  // src's elements reached through st (non-negative strides)
    for (int k = 0; k < st.ndim; ++k) {
      if (st.shape[k] == 0) return;
      src_extent += (st.shape[k] - 1) * st.stride[1][k];
    }
    F32Scratch o(dt, out, out_numel), s(dt, src, src_extent);
    scatter_reduce(op, DT::F32, o.get(), s.get(), index, st, dim, include_self, count, out_numel);
    return o.store(dt, out);
  }
  (void)out_numel;
  int64_t lines = 1;
  for (int k = 0; k < st.ndim; ++k)
    if (k != dim) lines *= st.shape[k];
  if (lines <= 0 || st.shape[dim] <= 0) return;
  TG_DISPATCH_FLOAT(dt, "scatter_reduce", [&] {
    scatter_kernel<scalar_t>
        <<<detail::grid_for(lines, kThreads), kThreads, 0, detail::cur_stream()>>>(
            op, static_cast<scalar_t*>(out), static_cast<const scalar_t*>(src), index, st, dim,
            include_self, count, lines);
    TG_CUDA_LAUNCH_CHECK("scatter_kernel");
  });
}

}  // namespace tg::cuda
