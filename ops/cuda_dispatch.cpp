// ops/cuda_dispatch.cpp — the shared pieces of the CUDA branches of the ops: strided descriptors,
// multi-dim reductions (one kernel per run of adjacent reduced dims).
#include "ops/cuda_dispatch.hpp"

#include "ops/detail.hpp"

namespace tg::detail {

kern::Strided make_strided(const Shape& out, std::initializer_list<const Shape*> operands) {
  if (out.size() > static_cast<size_t>(kern::kMaxDims))
    throw Error(fmt::format("cuda: shape {} has {} dims; CUDA kernels take at most {}",
                            shape_str(out), out.size(), kern::kMaxDims));
  kern::Strided st;
  st.ndim = static_cast<int>(out.size());
  Shape cs = contiguous_strides(out);
  for (int d = 0; d < st.ndim; ++d) {
    st.shape[d] = out[d];
    st.stride[0][d] = cs[d];
  }
  int k = 1;
  for (const Shape* s : operands) {
    Shape bs = broadcast_strides(*s, out);
    for (int d = 0; d < st.ndim; ++d) st.stride[k][d] = bs[d];
    ++k;
  }
  return st;
}

void set_operand(kern::Strided& st, int k, const Shape& strides, int64_t offset) {
  for (int d = 0; d < st.ndim; ++d) st.stride[k][d] = strides[d];
  st.offset[k] = offset;
}

Tensor cuda_reduce(const Tensor& x_in, const std::vector<bool>& reduced, kern::RedOp op) {
  const Tensor x = dense(x_in);
  if (x.numel() == 0) {  // an empty input: a sum of nothing is 0 (max/min are refused earlier)
    Shape keep = x.shape();
    for (size_t d = 0; d < keep.size(); ++d)
      if (reduced[d]) keep[d] = 1;
    return zeros(keep, x.dtype(), x.device());
  }
  Tensor cur = x;
  Shape shape = x.shape();
  const int64_t n = static_cast<int64_t>(shape.size());
  // Runs of reduced dims from the last to the first; size-1 dims inside a run join it.
  int64_t d = n - 1;
  while (d >= 0) {
    if (!reduced[d] || shape[d] == 1) {
      --d;
      continue;
    }
    int64_t hi = d, lo = d;
    while (lo - 1 >= 0 && (reduced[lo - 1] || shape[lo - 1] == 1)) --lo;
    int64_t outer = 1, r = 1, inner = 1;
    for (int64_t i = 0; i < n; ++i) (i < lo ? outer : i <= hi ? r : inner) *= shape[i];
    Shape next = shape;
    for (int64_t i = lo; i <= hi; ++i)
      if (reduced[i]) next[i] = 1;
    Tensor out = Tensor::empty(next, cur.dtype(), x.device());
    kernels("reduce", x)
        .reduce(op, cdt(cur.dtype()), out.data_ptr(), cur.data_ptr(), outer, r, inner);
    cur = out;
    shape = next;
    d = lo - 1;
  }
  if (cur.same(x)) cur = x.detach().clone();  // nothing reduced: a copy, like the CPU
  return cur;
}

}  // namespace tg::detail
