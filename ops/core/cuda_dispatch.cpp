// ops/core/cuda_dispatch.cpp — the shared pieces of the CUDA branches of the ops: strided descriptors.
#include "ops/core/cuda_dispatch.hpp"

#include "ops/core/detail.hpp"

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

}  // namespace tg::detail
