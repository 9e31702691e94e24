// ops/index/index.cpp — PyTorch's C++ indexing: x.index({0, Slice(1, None, 2), None, Ellipsis, t}),
// index_put_ and index_put, composed from the view ops (select, slice, unsqueeze, permute: views,
// their backward theirs) and, for tensor indices, one index_select (a copy whose backward
// scatter-adds, so repeated positions sum their gradients).
//
// Shapes: x (D0, D1, ...). Indices are read left to right against x's dims; Ellipsis stands for
// the dims no other index names. Integers, slices and None are applied first, as views (an
// integer selects, as in PyTorch, so it never counts as an advanced index). The tensor indices
// then form one advanced index (NumPy's rules, which PyTorch follows): int64 tensors of any
// shape broadcast together to B; a bool tensor over m dims stands for its true positions (one
// int64 tensor per dim, nonzero()'s columns); a 0-dim bool adds a dim of size 1 it keeps (true)
// or empties (false). The result holds B in place of the indexed dims when they are adjacent,
// else B first, then the remaining dims in order (x[i, :, j] of (A, N, C) is (B..., N)).
// One deliberate difference from PyTorch 1.13: there a bool mask over m > 1 dims counts as
// one dim for the indices after it (x[mask2d, 1] of (2, 3, 4) selects along dim 1 and then
// rejects the mask); here it consumes its m dims, as NumPy and PyTorch's indexing docs say.
// Deliberately not here: gather/scatter_add (indexing.cpp), the in-place machinery
// (inplace.cpp).
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <limits>

namespace tg {
using namespace detail;

std::string TensorIndex::str() const {
  auto opt = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "None"; };
  switch (kind_) {
    case Kind::Integer:
      return std::to_string(i_);
    case Kind::Slice:
      return fmt::format("{}:{}:{}", opt(slice_.start), opt(slice_.stop), slice_.step);
    case Kind::None:
      return "None";
    case Kind::Ellipsis:
      return "...";
    case Kind::Tensor:
      return t_.defined()
                 ? fmt::format("tensor{} {}", shape_str(t_.shape()), dtype_name(t_.dtype()))
                 : "tensor(undefined)";
  }
  return "?";
}

namespace {
using Kind = TensorIndex::Kind;

std::string indices_str(const std::vector<TensorIndex>& idx) {
  std::string s = "[";
  for (size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + idx[i].str();
  return s + "]";
}

// How many of x's dims an index consumes.
int64_t dims_used(const TensorIndex& i) {
  switch (i.kind()) {
    case Kind::Integer:
    case Kind::Slice:
      return 1;
    case Kind::Tensor:
      return i.tensor().defined() && i.tensor().dtype() == kBool ? i.tensor().dim() : 1;
    default:
      return 0;
  }
}

// The true positions of a bool tensor of m >= 1 dims: m int64 1-D tensors on the CPU, one per
// dim (the columns of nonzero(mask)).
std::vector<Tensor> true_positions(const Tensor& mask) {
  const Tensor m = mask.detach().to(kCPU).contiguous();
  const Shape& s = m.shape();
  const bool* p = m.data<bool>();
  int64_t count = 0;
  for (int64_t e = 0; e < m.numel(); ++e) count += p[e];
  std::vector<Tensor> cols;
  for (int64_t k = 0; k < m.dim(); ++k) cols.push_back(Tensor::empty({count}, kInt64));
  int64_t at = 0;
  for (int64_t e = 0; e < m.numel(); ++e) {
    if (!p[e]) continue;
    for (int64_t k = m.dim(), r = e; k-- > 0; r /= s[k]) cols[k].data<int64_t>()[at] = r % s[k];
    ++at;
  }
  return cols;
}

// One advanced index after the basic ones are applied: int64 positions (CPU) along dim `dim` of
// the view, which is dim `xdim` of the input (-1: a dim a 0-dim bool added).
struct Advanced {
  int64_t dim, xdim;
  Tensor idx;
};
struct Parsed {
  Tensor view;  // x with the integers, slices, None and Ellipsis applied
  std::vector<Advanced> adv;
};

// A tensor index: its advanced entries appended (d, xd advance past the dims it consumes).
void add_tensor(const char* op, Parsed& p, const Tensor& t, int64_t& d, int64_t& xd,
                const Tensor& x, const std::vector<TensorIndex>& indices) {
  check_defined(t, op, "tensor index");
  if (t.device() != kCPU && t.device() != x.device())
    throw Error(fmt::format(
        "{}: a tensor index {} on {} must be on the cpu or on input {}'s "
        "device {}",
        op, shape_str(t.shape()), t.device().str(), shape_str(x.shape()), x.device().str()));
  if (t.dtype() == kInt64) {
    p.adv.push_back({d++, xd++, t.detach().to(kCPU)});
    return;
  }
  if (t.dtype() != kBool)
    throw Error(fmt::format("{}: a tensor index must be int64 or bool, got {} (input {})", op,
                            dtype_name(t.dtype()), shape_str(x.shape())));
  if (t.dim() == 0) {  // a new dim of size 1, kept (true) or emptied (false)
    p.view = unsqueeze(p.view, d);
    const bool keep = t.to(kCPU).item<bool>();
    p.adv.push_back({d++, -1, keep ? zeros({1}, kInt64) : zeros({0}, kInt64)});
    return;
  }
  const int64_t m = t.dim();
  const Shape& rs = p.view.shape();
  const Shape want(rs.begin() + d, rs.begin() + d + m);
  if (t.shape() != want)
    throw Error(fmt::format(
        "{}: bool mask {} must match the shape {} of the dims it indexes (dims {} to {} of "
        "input {}, indices {})",
        op, shape_str(t.shape()), shape_str(want), xd, xd + m - 1, shape_str(x.shape()),
        indices_str(indices)));
  std::vector<Tensor> cols = true_positions(t);
  for (int64_t k = 0; k < m; ++k) p.adv.push_back({d++, xd++, cols[k]});
}

// Applies the integers, slices, None and Ellipsis as views; collects the tensor indices.
Parsed parse(const char* op, const Tensor& x, const std::vector<TensorIndex>& indices) {
  int64_t used = 0, ellipses = 0;
  for (const TensorIndex& i : indices) {
    used += dims_used(i);
    ellipses += i.kind() == Kind::Ellipsis;
  }
  if (ellipses > 1)
    throw Error(fmt::format("{}: an index can only have a single ellipsis, got {} (input {})", op,
                            indices_str(indices), shape_str(x.shape())));
  if (used > x.dim())
    throw Error(fmt::format("{}: too many indices for a tensor of dimension {}: {} (input {})", op,
                            x.dim(), indices_str(indices), shape_str(x.shape())));
  Parsed p{x, {}};
  int64_t d = 0, xd = 0;  // the dim of the view the next index reads, and the dim of x
  for (const TensorIndex& i : indices) {
    switch (i.kind()) {
      case Kind::Integer: {
        const int64_t size = p.view.shape()[d];
        const int64_t k = i.integer() < 0 ? i.integer() + size : i.integer();
        if (k < 0 || k >= size)
          throw Error(fmt::format(
              "{}: index {} is out of range for dim {} of size {} (input {}, indices {})", op,
              i.integer(), xd, size, shape_str(x.shape()), indices_str(indices)));
        p.view = select(p.view, d, k);
        ++xd;
        break;
      }
      case Kind::Slice: {
        const indexing::Slice& s = i.slice();
        if (s.step <= 0)
          throw Error(fmt::format("{}: slice step must be positive, got {} (input {}, indices {})",
                                  op, s.step, shape_str(x.shape()), indices_str(indices)));
        p.view = slice(p.view, d++, s.start.value_or(0),
                       s.stop.value_or(std::numeric_limits<int64_t>::max()), s.step);
        ++xd;
        break;
      }
      case Kind::None:
        p.view = unsqueeze(p.view, d++);
        break;
      case Kind::Ellipsis:
        d += x.dim() - used;
        xd += x.dim() - used;
        break;
      case Kind::Tensor:
        add_tensor(op, p, i.tensor(), d, xd, x, indices);
        break;
    }
  }
  return p;
}

// The advanced indices broadcast to one shape B; throws naming every shape (PyTorch's words).
Shape broadcast_indices(const char* op, const std::vector<Advanced>& adv, const Tensor& x,
                        const std::vector<TensorIndex>& indices) {
  Shape b;
  std::string all;
  for (const Advanced& a : adv) all += (all.empty() ? "" : ", ") + shape_str(a.idx.shape());
  for (const Advanced& a : adv) {
    const Shape& s = a.idx.shape();
    Shape out(std::max(b.size(), s.size()), 1);
    for (size_t k = 0; k < out.size(); ++k) {
      const int64_t u = k < out.size() - b.size() ? 1 : b[k - (out.size() - b.size())];
      const int64_t v = k < out.size() - s.size() ? 1 : s[k - (out.size() - s.size())];
      if (u != v && u != 1 && v != 1)
        throw Error(fmt::format(
            "{}: shape mismatch: indexing tensors could not be broadcast together with shapes "
            "{} (input {}, indices {})",
            op, all, shape_str(x.shape()), indices_str(indices)));
      out[k] = u == 1 ? v : u;
    }
    b = out;
  }
  return b;
}

// Row-major positions (int64, CPU, shape b) into the indexed dims of the view, each index
// broadcast to b, negatives counted from the end, every value range-checked.
Tensor flat_positions(const char* op, const Parsed& p, const Shape& b, const Tensor& x,
                      const std::vector<TensorIndex>& indices) {
  Tensor flat = zeros(b, kInt64);
  int64_t* pf = flat.data<int64_t>();
  int64_t mult = 1;
  for (size_t k = p.adv.size(); k-- > 0;) {
    const Advanced& a = p.adv[k];
    const int64_t size = p.view.size(a.dim);
    const Tensor e = dense_copy(a.idx.expand(b));
    const int64_t* pe = e.data<int64_t>();
    for (int64_t j = 0; j < e.numel(); ++j) {
      const int64_t v = pe[j] < 0 ? pe[j] + size : pe[j];
      if (v < 0 || v >= size)
        throw Error(
            fmt::format("{}: index {} is out of range for dim {} of size {} (input {}, indices {})",
                        op, pe[j], a.xdim, size, shape_str(x.shape()), indices_str(indices)));
      pf[j] += v * mult;
    }
    mult *= size;
  }
  return flat;
}

Tensor index_impl(const char* op, const Tensor& x, const std::vector<TensorIndex>& indices) {
  check_defined(x, op, "input");
  Parsed p = parse(op, x, indices);
  if (p.adv.empty()) return p.view;
  const Shape b = broadcast_indices(op, p.adv, x, indices);
  const Tensor flat = flat_positions(op, p, b, x, indices);
  const int64_t k = static_cast<int64_t>(p.adv.size());
  bool adjacent = true;
  for (int64_t j = 1; j < k; ++j) adjacent = adjacent && p.adv[j].dim == p.adv[j - 1].dim + 1;
  Tensor r = p.view;
  int64_t at = p.adv[0].dim;  // where the indexed dims (then B) sit
  if (!adjacent) {            // the indexed dims first, the rest in order; B goes first
    std::vector<int64_t> perm;
    std::vector<bool> is_adv(static_cast<size_t>(r.dim()), false);
    for (const Advanced& a : p.adv) perm.push_back(a.dim), is_adv[a.dim] = true;
    for (int64_t j = 0; j < r.dim(); ++j)
      if (!is_adv[j]) perm.push_back(j);
    r = permute(r, perm);
    at = 0;
  }
  const Shape& rs = r.shape();
  Shape pre(rs.begin(), rs.begin() + at), post(rs.begin() + at + k, rs.end());
  Shape merged = pre, out = pre;
  merged.push_back(shape_numel(Shape(rs.begin() + at, rs.begin() + at + k)));
  merged.insert(merged.end(), post.begin(), post.end());
  out.insert(out.end(), b.begin(), b.end());
  out.insert(out.end(), post.begin(), post.end());
  const Tensor rows = index_select(reshape(r, merged), at, flat.reshape({-1}).to(x.device()));
  return reshape(rows, out);
}

// The flat positions in x (int64, CPU) of the elements x.index(indices) shows, in its shape.
Tensor positions(const char* op, const Tensor& x, const std::vector<TensorIndex>& indices) {
  const Tensor ids = arange(static_cast<double>(x.numel())).reshape(x.shape());
  std::vector<TensorIndex> cpu;
  for (const TensorIndex& i : indices)
    cpu.push_back(
        i.kind() == Kind::Tensor && i.tensor().defined() ? TensorIndex(i.tensor().to(kCPU)) : i);
  return index_impl(op, ids, cpu);
}

bool has_tensor(const std::vector<TensorIndex>& indices) {
  for (const TensorIndex& i : indices)
    if (i.kind() == Kind::Tensor) return true;
  return false;
}
}  // namespace

Tensor index(const Tensor& x, const std::vector<TensorIndex>& indices, Site site) {
  SiteScope scope(site);
  return index_impl("index", x, indices);
}

// out = x with values (broadcast to the indexed shape) written or added at the positions
// x.index(indices) shows: the values scatter_add-ed over the flat positions into zeros, then
// added to x (accumulate) or put in place of x's written elements (where), so dvalues = dout
// gathered back and dx = dout (accumulate) or dout zeroed where written. Without accumulate only
// each position's last write lands: the others are zeroed before the scatter_add (and so get no
// gradient). bool x works in int64 (accumulate: a logical or, as PyTorch's).
namespace {
Tensor put(const char* op, const Tensor& x, const std::vector<TensorIndex>& indices,
           const Tensor& values, bool accumulate) {
  check_defined(x, op, "self");
  check_defined(values, op, "values");
  const Tensor pos = positions(op, x, indices);
  const Shape &ps = pos.shape(), &vs = values.shape();
  bool fits = vs.size() <= ps.size();
  for (size_t k = 0; fits && k < vs.size(); ++k)
    fits = vs[k] == 1 || vs[k] == ps[ps.size() - vs.size() + k];
  if (!fits)
    throw Error(fmt::format(
        "{}: shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of "
        "shape {} (self {}, indices {})",
        op, shape_str(vs), shape_str(ps), shape_str(x.shape()), indices_str(indices)));
  const DType wd = x.dtype() == kBool ? kInt64 : x.dtype();
  const Device dev = x.device();
  const int64_t n = x.numel();
  Tensor v = reshape(expand(values.to(dev).to(wd), ps).contiguous(), {-1});
  const Tensor p = reshape(pos, {-1});
  const Tensor xw = x.to(wd);
  Tensor out;  // the last op makes a new tensor (not a view): it becomes x's history in index_put_
  if (accumulate) {
    out = add(xw, reshape(scatter_add(zeros({n}, wd, dev), 0, p.to(dev), v), x.shape()));
  } else {
    // the last write to each position wins (from the end: the first seen)
    Tensor written = zeros({n}, kBool), won = Tensor::empty({p.numel()}, kBool);
    bool* pw = written.data<bool>();
    bool* pn = won.data<bool>();
    bool repeats = false;
    for (int64_t j = p.numel(); j-- > 0;) {
      const int64_t t = p.data<int64_t>()[j];
      pn[j] = !pw[t];
      repeats = repeats || pw[t];
      pw[t] = true;
    }
    if (repeats) v = where(won.to(dev), v, zeros({}, wd, dev));
    const Tensor put = scatter_add(zeros({n}, wd, dev), 0, p.to(dev), v);
    out = where(reshape(written, x.shape()).to(dev), reshape(put, x.shape()), xw);
  }
  return x.dtype() == kBool ? out.to(kBool) : out;
}
}  // namespace

Tensor index_put(const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& values,
                 bool accumulate, Site site) {
  SiteScope scope(site);
  return put("index_put", x, indices, values, accumulate);
}

// x[indices] = values: a write into the view x.index(indices) when every index is basic, else
// index_put's result written over x (ops/inplace/inplace.cpp's rules and autograd rebase).
Tensor index_put_(const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& values,
                  bool accumulate, Site site) {
  SiteScope scope(site);
  constexpr const char* op = "index_put_";
  check_defined(x, op, "self");
  check_defined(values, op, "values");
  if (!accumulate && !has_tensor(indices)) {
    copy_named(op, index_impl(op, x, indices), values);
    return x;
  }
  return inplace_update(op, x, {&values},
                        [&](const Tensor& v) { return put(op, v, indices, values, accumulate); });
}
Tensor index_put_(const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& value,
                  Site site) {
  return index_put_(x, indices, value, false, site);
}
Tensor index_put_(const Tensor& x, const std::vector<TensorIndex>& indices, double value,
                  Site site) {
  SiteScope scope(site);
  check_defined(x, "index_put_", "self");
  return index_put_(x, indices, scalar_tensor(value, x.dtype(), x.device()), false, site);
}

// ---- Tensor methods ----
Tensor Tensor::index(const std::vector<TensorIndex>& indices, Site site) const {
  return tg::index(*this, indices, site);
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& value,
                           Site site) {
  tg::index_put_(*this, indices, value, false, site);
  return *this;
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, double value, Site site) {
  tg::index_put_(*this, indices, value, site);
  return *this;
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& values,
                           bool accumulate, Site site) {
  tg::index_put_(*this, indices, values, accumulate, site);
  return *this;
}

}  // namespace tg
