// ops/shape/join.cpp — joining and splitting: cat (a copy: whole contiguous blocks with memcpy on
// the CPU, a strided copy per input on CUDA; dx_i = the narrow of dout each input came from),
// and stack, split and chunk, composed from cat, unsqueeze and narrow views, so their backward
// is theirs.
// Deliberately not here: the views themselves (views.cpp), index_select (ops/index/select.cpp).
#include "ops/autocast/autocast.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/ops.hpp"

#include <cstring>

namespace tg {
using namespace detail;

namespace {
// Copies x into out at `offset` elements, x's dims strided like out's (a slice of cat's output).
void cuda_copy_into(const Tensor& out, const Tensor& x, int64_t offset) {
  if (x.numel() == 0) return;
  kern::Strided st = make_strided(x.shape(), {&x.shape()});
  set_operand(st, 0, contiguous_strides(out.shape()), offset);
  kernels("cat", x.device()).strided_copy(cdt(x.dtype()), out.data_ptr(), x.data_ptr(), st);
}
}  // namespace

// ---- joining ----
// xs[i] (D..., n_i, D...) -> (D..., Σ n_i, D...); dxs[i] = dout narrowed to xs[i]'s rows.
Tensor cat(const std::vector<Tensor>& xs_in, int64_t dim, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("cat", xs_in)) return cat(*c, dim, site);
  if (xs_in.empty()) throw Error("cat: expected a non-empty list of tensors");
  std::vector<Tensor> xs = xs_in;
  for (Tensor& x : xs)
    if (x.defined()) x = x.contiguous();
  for (size_t i = 0; i < xs.size(); ++i) {
    std::string name = fmt::format("tensors[{}]", i);
    check_defined(xs[i], "cat", name.c_str());
    check_same_device(xs[0], xs[i], "cat", "tensors[0]", name.c_str());
  }
  const Shape& s0 = xs[0].shape();
  const int64_t n = xs[0].dim();
  if (n == 0) throw Error("cat: tensors[0] is 0-dim () and cannot be concatenated");
  const int64_t d = norm_dim(dim, n, "cat", s0);
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Shape& si = xs[i].shape();
    std::string name = fmt::format("tensors[{}]", i);
    check_same_dtype(xs[0], xs[i], "cat", "tensors[0]", name.c_str());
    bool ok = static_cast<int64_t>(si.size()) == n;
    for (int64_t k = 0; ok && k < n; ++k) ok = k == d || si[k] == s0[k];
    if (!ok)
      throw Error(
          fmt::format("cat: tensors[{}] {} does not match tensors[0] {}: shapes must be "
                      "equal except in dim {}",
                      i, shape_str(si), shape_str(s0), d));
    sizes.push_back(si[d]);
  }
  Shape os = s0;
  os[d] = 0;
  for (int64_t s : sizes) os[d] += s;
  Tensor out = Tensor::empty(os, xs[0].dtype(), xs[0].device());
  const int64_t outer = span(s0, 0, d), inner = span(s0, d + 1, n);
  const size_t es = dtype_size(out.dtype());
  char* po = static_cast<char*>(out.data_ptr());
  int64_t at = 0;  // CUDA: where xs[i]'s rows start along d
  for (size_t i = 0; on_cuda(out) && i < xs.size(); at += sizes[i++])
    cuda_copy_into(out, xs[i], at * inner);
  for (int64_t o = 0; !on_cuda(out) && o < outer; ++o)
    for (size_t i = 0; i < xs.size(); ++i) {
      const size_t bytes = sizes[i] * inner * es;
      std::memcpy(po, static_cast<const char*>(xs[i].data_ptr()) + o * bytes, bytes);
      po += bytes;
    }
  if (needs_record(xs)) {
    std::vector<bool> want;
    for (const Tensor& x : xs) want.push_back(x.requires_grad());
    // data movement only
    record("cat", out, xs, RecordInfo().flops(0, 0).saves_nothing().differentiable(),
           [sizes, want, d](const Tensor& g) -> std::vector<Tensor> {
             std::vector<Tensor> dxs;
             int64_t off = 0;
             for (size_t i = 0; i < sizes.size(); ++i) {
               dxs.push_back(want[i] ? narrow(g, d, off, sizes[i]) : Tensor());
               off += sizes[i];
             }
             return dxs;
           });
  }
  return out;
}

// Joins equal-shaped tensors along a new dim: unsqueeze each, then cat.
Tensor stack(const std::vector<Tensor>& xs, int64_t dim, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("stack", xs)) return stack(*c, dim, site);
  if (xs.empty()) throw Error("stack: expected a non-empty list of tensors");
  for (size_t i = 0; i < xs.size(); ++i) {
    std::string name = fmt::format("tensors[{}]", i);
    check_defined(xs[i], "stack", name.c_str());
    check_same_dtype(xs[0], xs[i], "stack", "tensors[0]", name.c_str());
    if (xs[i].shape() != xs[0].shape())
      throw Error(fmt::format("stack: tensors[{}] {} and tensors[0] {} must have the same shape", i,
                              shape_str(xs[i].shape()), shape_str(xs[0].shape())));
  }
  const int64_t d = norm_dim(dim, xs[0].dim() + 1, "stack", xs[0].shape());
  std::vector<Tensor> us;
  for (const Tensor& x : xs) us.push_back(unsqueeze(x, d));
  return cat(us, d);
}

// ---- splitting (narrow views of x: copies, each with its own backward) ----
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim,
                          Site site) {
  SiteScope scope(site);
  check_defined(x, "split", "input");
  const int64_t d = norm_dim(dim, x.dim(), "split", x.shape());
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      throw Error(fmt::format("split: sizes {} has a negative entry (input {})", list_str(sizes),
                              shape_str(x.shape())));
    total += s;
  }
  if (total != x.shape()[d])
    throw Error(fmt::format("split: sizes {} sum to {} but dim {} of input {} has size {}",
                            list_str(sizes), total, dim, shape_str(x.shape()), x.shape()[d]));
  std::vector<Tensor> out;
  int64_t off = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(x, d, off, s));
    off += s;
  }
  return out;
}

void detail::check_parts(size_t got, size_t want, const char* op, const Tensor& x, int64_t dim) {
  if (got != want)
    throw Error(fmt::format("{}<{}>: x {} along dim {} gives {} parts, not {}", op, want,
                            shape_str(x.shape()), dim, got, want));
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim, Site site) {
  SiteScope scope(site);
  check_defined(x, "split", "input");
  const int64_t d = norm_dim(dim, x.dim(), "split", x.shape());
  const int64_t n = x.shape()[d];
  if (split_size < 0 || (split_size == 0 && n != 0))
    throw Error(fmt::format("split: split_size must be positive, got {} (dim {} of input {})",
                            split_size, dim, shape_str(x.shape())));
  std::vector<int64_t> sizes;
  for (int64_t off = 0; off < n; off += split_size) sizes.push_back(std::min(split_size, n - off));
  if (sizes.empty()) sizes.push_back(0);  // an empty dim splits into one empty piece
  return split(x, sizes, d);
}

// PyTorch's sizing: pieces of ceil(n / chunks), the last smaller; fewer pieces when they run out.
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim, Site site) {
  SiteScope scope(site);
  check_defined(x, "chunk", "input");
  if (chunks <= 0)
    throw Error(fmt::format("chunk: chunks must be positive, got {} (input {})", chunks,
                            shape_str(x.shape())));
  const int64_t d = norm_dim(dim, x.dim(), "chunk", x.shape());
  const int64_t n = x.shape()[d];
  if (n == 0) return split(x, std::vector<int64_t>(chunks, 0), d);
  return split(x, (n + chunks - 1) / chunks, d);
}

}  // namespace tg
