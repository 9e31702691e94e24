// ops/index/select.cpp — index_select: out = x with dim taking the rows index[0], index[1], ...
// (a copy), dx = dout accumulated into x's shape (index_add), so a repeated index gets the sum of
// its gradients; on CUDA the range check reads one int64 back and the backward's index_add runs
// in a fixed order (deterministic).
// Deliberately not here: gather / scatter (gather.cpp, scatter.cpp), x.index({...}) (index.cpp).
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/widen.hpp"
#include "ops/ops.hpp"

#include <cstring>

namespace tg {
using namespace detail;

// out = x with dim taking the rows index[0], index[1], ... (index int64, 1-D or 0-dim); dx
// accumulates (index_add) so a repeated index gets the sum of its gradients.
namespace {
// index_select on a CUDA device: the range check reads one int64 back; backward is index_add in
// a fixed order (deterministic).
Tensor cuda_index_select(const Tensor& x, int64_t d, const Tensor& index) {
  const Shape& xs = x.shape();
  const int64_t outer = span(xs, 0, d), size = xs[d], inner = span(xs, d + 1, x.dim());
  const int64_t k = index.numel();
  const auto* pi = static_cast<const int64_t*>(index.data_ptr());
  const int64_t bad =
      k == 0 ? -1 : kernels("index_select", x.device()).first_out_of_range(pi, k, 0, size);
  if (bad >= 0)
    throw Error(fmt::format(
        "index_select: index {} at position {} is out of range for dim {} of size {} (input {}, "
        "index {})",
        index.reshape({-1}).narrow(0, bad, 1).item<int64_t>(), bad, d, size, shape_str(xs),
        shape_str(index.shape())));
  Shape os = xs;
  os[d] = k;
  Tensor out = Tensor::empty(os, x.dtype(), x.device());
  if (out.numel() > 0)
    kernels("index_select", x.device())
        .index_select(cdt(x.dtype()), out.data_ptr(), x.data_ptr(), pi, outer, size, k, inner);
  if (needs_record({&x})) {
    RecordInfo info = RecordInfo().flops(0, 0);
    Saved hi = info.save(index);
    record("index_select", out, {x}, info.differentiable(),
           [xs, d, hi](const Tensor& g) -> std::vector<Tensor> {
             const Tensor si = hi.get();
             Tensor dx = zeros(xs, g.dtype(), g.device());
             const int64_t outer = span(xs, 0, d), size = xs[d], inner = span(xs, d + 1, xs.size());
             if (g.numel() > 0)
               kernels("index_select backward", g.device())
                   .index_add(cdt(g.dtype()), dx.data_ptr(), g.data_ptr(),
                              static_cast<const int64_t*>(si.data_ptr()), outer, size, si.numel(),
                              inner, true);
             return {record_adjoint("index_select_backward", dx, g,
                                    [d, si](const Tensor& gg) { return index_select(gg, d, si); })};
           });
  }
  return out;
}
}  // namespace

Tensor index_select(const Tensor& x_in, int64_t dim, const Tensor& index_in, Site site) {
  SiteScope scope(site);
  const Tensor x = x_in.defined() ? x_in.contiguous() : x_in;
  const Tensor index = dense(index_in);
  check_defined(x, "index_select", "input");
  check_dtype(index, kInt64, "index_select", "index", true);
  check_same_device(x, index, "index_select", "input", "index");
  if (index.dim() > 1)  // 0-dim selects one row, like PyTorch
    throw Error(fmt::format("index_select: index {} must be 1-D (input {})",
                            shape_str(index.shape()), shape_str(x.shape())));
  const int64_t d = norm_dim(dim, x.dim(), "index_select", x.shape());
  const Shape& xs = x.shape();
  const int64_t outer = span(xs, 0, d), size = xs[d], inner = span(xs, d + 1, x.dim());
  const int64_t k = index.numel();
  if (on_cuda(x)) return cuda_index_select(x, d, index);
  const int64_t* pi = index.data<int64_t>();
  for (int64_t j = 0; j < k; ++j)
    if (pi[j] < 0 || pi[j] >= size)
      throw Error(
          fmt::format("index_select: index {} at position {} is out of range for dim {} of "
                      "size {} (input {}, index {})",
                      pi[j], j, dim, size, shape_str(xs), shape_str(index.shape())));
  Shape os = xs;
  os[d] = k;
  Tensor out = Tensor::empty(os, x.dtype());
  const size_t es = dtype_size(x.dtype());
  const char* px = static_cast<const char*>(x.data_ptr());
  char* po = static_cast<char*>(out.data_ptr());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(po + (o * k + j) * inner * es, px + (o * size + pi[j]) * inner * es, inner * es);
  if (needs_record({&x})) {
    RecordInfo info = RecordInfo().flops(0, 0);
    Saved hi = info.save(index);
    // data movement only
    record("index_select", out, {x}, info.differentiable(),
           [xs, d, hi](const Tensor& g) -> std::vector<Tensor> {
             const Tensor si = hi.get();
             const Tensor gw = widen(g);  // bfloat16 / float16: summed in float32
             Tensor dx = zeros(xs, gw.dtype());
             const int64_t outer = span(xs, 0, d), size = xs[d], inner = span(xs, d + 1, xs.size());
             const int64_t k = si.numel();
             const int64_t* pi = si.data<int64_t>();
             dispatch_float(gw.dtype(), "index_select", [&](auto tag) {
               using T = decltype(tag);
               const T* pg = gw.data<T>();
               T* pd = dx.data<T>();
               for (int64_t o = 0; o < outer; ++o)
                 for (int64_t j = 0; j < k; ++j) {
                   const T* src = pg + (o * k + j) * inner;
                   T* dst = pd + (o * size + pi[j]) * inner;
                   for (int64_t i = 0; i < inner; ++i) dst[i] += src[i];
                 }
             });
             if (gw.dtype() != g.dtype()) dx = narrow(dx, g.dtype());  // rounded once
             return {record_adjoint("index_select_backward", dx, g,
                                    [d, si](const Tensor& gg) { return index_select(gg, d, si); })};
           });
  }
  return out;
}

}  // namespace tg
