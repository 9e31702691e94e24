// ops/index/embedding.cpp — embedding lookup, forward and backward side by side.
//
// indices int64 (...), weight (V, C) -> out (..., C): out[k] = weight[indices[k]].
// Backward scatter-adds dout rows into a zero (V, C) dweight; indices get no gradient.
// padding_idx: rows equal to it get no gradient (the forward still reads them, like PyTorch).
// std::nullopt (the default) means no padding row, like PyTorch's None; negative values count
// from V like PyTorch (-1 is row V-1). Values outside [-V, V) are an error.
// The CPU kernels (row gather, index_add) are in ops/index/cpu/embedding.cpp, the CUDA ones in cuda/.
// Deliberately not here: max_norm renormalisation, sparse gradients.
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/widen.hpp"
#include "ops/ops.hpp"

#include <fmt/ranges.h>

#include <cstring>

namespace tg {
using namespace detail;

namespace {
constexpr const char* kOp = "embedding";

// Unravels a flat position into "[i,j,...]" for error messages.
std::string position_str(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = flat % s[d];
    flat /= s[d];
  }
  return fmt::format("[{}]", fmt::join(idx, ","));
}

// Validates the arguments; returns padding_idx resolved to a row in [0, V), or -1 for none.
int64_t check_embedding(const Tensor& indices, const Tensor& weight,
                        std::optional<int64_t> pad_opt) {
  check_dtype(indices, kInt64, kOp, "indices", true);
  check_float(weight, kOp, "weight", true);
  check_same_device(indices, weight, kOp, "indices", "weight");
  if (weight.dim() != 2)
    throw Error(fmt::format("{}: weight {} must be 2-D (V, C) (indices {})", kOp,
                            shape_str(weight.shape()), shape_str(indices.shape())));
  const int64_t V = weight.size(0);
  if (on_cuda(indices) && indices.numel() > 0) {  // one read-back: the first bad position
    const int64_t k = kernels(kOp, indices.device())
                          .first_out_of_range(static_cast<const int64_t*>(indices.data_ptr()),
                                              indices.numel(), 0, V);
    if (k >= 0)
      throw Error(fmt::format(
          "{}: index {} at {} is out of range for weight {} with V = {} (indices {})", kOp,
          indices.reshape({-1}).narrow(0, k, 1).item<int64_t>(), position_str(k, indices.shape()),
          shape_str(weight.shape()), V, shape_str(indices.shape())));
  }
  const int64_t* pi = on_cuda(indices) ? nullptr : indices.data<int64_t>();
  for (int64_t k = 0; pi && k < indices.numel(); ++k) {
    if (pi[k] < 0 || pi[k] >= V)
      throw Error(
          fmt::format("{}: index {} at {} is out of range for weight {} with V = {} (indices {})",
                      kOp, pi[k], position_str(k, indices.shape()), shape_str(weight.shape()), V,
                      shape_str(indices.shape())));
  }
  if (!pad_opt) return -1;
  const int64_t padding_idx = *pad_opt;
  if (padding_idx < -V || padding_idx >= V)
    throw Error(fmt::format(
        "{}: padding_idx {} is out of range for weight {} with V = {} (expected [-V, V))", kOp,
        padding_idx, shape_str(weight.shape()), V));
  return padding_idx < 0 ? padding_idx + V : padding_idx;
}
// On CUDA, backward adds dout rows in a fixed order unless embedding_set_deterministic(false)
// (the CPU's order is always fixed).
bool g_deterministic = true;

// out (indices..., C) = weight rows at indices: cpu::embedding_forward or cuda::index_select.
void forward_kernel(const Tensor& out, const Tensor& indices, const Tensor& weight) {
  const int64_t V = weight.size(0), C = weight.size(1), n = indices.numel();
  if (out.numel() == 0) return;
  if (on_cuda(weight)) {
    kernels(kOp, weight.device())
        .index_select(cdt(weight.dtype()), out.data_ptr(), weight.data_ptr(),
                      static_cast<const int64_t*>(indices.data_ptr()), 1, V, n, C);
    return;
  }
  if (is_reduced(weight.dtype())) {  // bfloat16 / float16: rows of bits
    cpu::embedding_forward<uint16_t>(static_cast<uint16_t*>(out.data_ptr()),
                                     static_cast<const uint16_t*>(weight.data_ptr()),
                                     indices.data<int64_t>(), n, C);
    return;
  }
  dispatch_float(weight.dtype(), kOp, [&](auto tag) {
    using T = decltype(tag);
    cpu::embedding_forward<T>(out.data<T>(), weight.data<T>(), indices.data<int64_t>(), n, C);
  });
}

// dw (V, C, zeroed) += dout rows at indices, the padding row (pad >= 0) left at zero:
// cpu::embedding_backward or cuda::index_add (deterministic: a fixed order on the GPU).
void backward_kernel(const Tensor& dw, const Tensor& g, const Tensor& indices, int64_t pad,
                     bool deterministic) {
  const int64_t V = dw.size(0), C = dw.size(1), n = indices.numel();
  if (g.numel() == 0) return;
  if (on_cuda(g)) {
    kernels("embedding backward", g.device())
        .index_add(cdt(g.dtype()), dw.data_ptr(), g.data_ptr(),
                   static_cast<const int64_t*>(indices.data_ptr()), 1, V, n, C, deterministic);
    if (pad >= 0)
      kernels("embedding backward", g.device())
          .memset_zero(static_cast<char*>(dw.data_ptr()) + pad * C * dtype_size(g.dtype()),
                       C * dtype_size(g.dtype()), g.device().index);
    return;
  }
  if (is_reduced(g.dtype())) {  // summed in float32, each dweight element rounded once
    Tensor d32 = zeros(dw.shape(), kFloat32);
    backward_kernel(d32, widen(g), indices, pad, deterministic);
    std::memcpy(dw.data_ptr(), narrow(d32, g.dtype()).data_ptr(),
                dw.numel() * dtype_size(g.dtype()));
    return;
  }
  dispatch_float(g.dtype(), kOp, [&](auto tag) {
    using T = decltype(tag);
    cpu::embedding_backward<T>(dw.data<T>(), g.data<T>(), indices.data<int64_t>(), n, C, pad);
  });
}
}  // namespace

void embedding_set_deterministic(bool on) { g_deterministic = on; }

Tensor embedding(const Tensor& indices_in, const Tensor& weight_in,
                 std::optional<int64_t> padding_idx, Site site) {
  SiteScope scope(site);
  const Tensor indices = contig(indices_in);
  const Tensor weight = contig(weight_in);
  const int64_t pad = check_embedding(indices, weight, padding_idx);
  const int64_t V = weight.size(0), C = weight.size(1);
  Shape os = indices.shape();
  os.push_back(C);
  Tensor out = Tensor::empty(os, weight.dtype(), weight.device());
  forward_kernel(out, indices, weight);
  if (needs_record({&weight})) {
    const bool det = g_deterministic;
    // Cost model: a gather forward (0 FLOPs), one add per output element backward.
    RecordInfo info = RecordInfo().flops(0, static_cast<double>(out.numel()));
    Saved hi = info.save(indices);  // indices: which dweight row each dout row adds into
    record(kOp, out, {indices, weight}, info.differentiable(),
           [hi, pad, V, C, det](const Tensor& g) -> std::vector<Tensor> {
             const Tensor si = hi.get();
             Tensor dw = zeros({V, C}, g.dtype(), g.device());
             backward_kernel(dw, g, si, pad, det);
             // the adjoint of the row scatter is the lookup again, padding rows held at 0
             return {Tensor(),
                     record_adjoint("embedding_backward", dw, g, [si, pad](const Tensor& gg) {
                       const Tensor rows = embedding(si, gg);
                       if (pad < 0) return rows;
                       return masked_fill(rows, unsqueeze(eq(si, pad), -1), 0.0);
                     })};
           });
  }
  return out;
}

}  // namespace tg
