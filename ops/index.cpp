// ops/index.cpp — PyTorch's C++ indexing: x.index({0, Slice(1, None, 2), None, Ellipsis, t})
// and index_put_, composed from the view ops (select, slice, unsqueeze: views, their backward
// theirs) and, for tensor indices, index_select (a copy with an accumulating backward).
//
// Shapes: x (D0, D1, ...). Indices are read left to right against x's dims; Ellipsis stands
// for the dims no other index names. An int64 tensor (0-D or 1-D) picks rows of its dim; a bool
// tensor of shape (Dk, ..., Dk+m-1) picks the positions where it is true out of those m dims,
// which become one dim of their count (x[mask] for a mask of x's shape: the true elements, 1-D).
// Deliberately not here: gather/scatter_add (indexing.cpp), the in-place machinery
// (inplace.cpp).
#include "ops/cuda_dispatch.hpp"
#include "ops/detail.hpp"
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
std::string indices_str(const std::vector<TensorIndex>& idx) {
  std::string s = "[";
  for (size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + idx[i].str();
  return s + "]";
}

// How many of x's dims an index consumes.
int64_t dims_used(const TensorIndex& i) {
  switch (i.kind()) {
    case TensorIndex::Kind::Integer:
    case TensorIndex::Kind::Slice:
      return 1;
    case TensorIndex::Kind::Tensor:
      return i.tensor().defined() && i.tensor().dtype() == kBool ? i.tensor().dim() : 1;
    default:
      return 0;
  }
}

// Flat positions (int64, 1-D) where a bool tensor is true, on mask's device.
Tensor true_positions(const Tensor& mask) {
  const Tensor m = mask.detach().contiguous().to(kCPU);
  const bool* p = m.data<bool>();
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < m.numel(); ++i)
    if (p[i]) pos.push_back(i);
  Tensor out = Tensor::empty({static_cast<int64_t>(pos.size())}, kInt64);
  std::copy(pos.begin(), pos.end(), out.data<int64_t>());
  return out.to(mask.device());
}
}  // namespace

Tensor index(const Tensor& x, const std::vector<TensorIndex>& indices, Site site) {
  SiteScope scope(site);
  check_defined(x, "index", "input");
  int64_t used = 0, ellipses = 0, tensors = 0;
  for (const TensorIndex& i : indices) {
    used += dims_used(i);
    ellipses += i.kind() == TensorIndex::Kind::Ellipsis;
    tensors += i.kind() == TensorIndex::Kind::Tensor;
  }
  if (ellipses > 1)
    throw Error(fmt::format("index: an index can only have a single ellipsis, got {} (input {})",
                            indices_str(indices), shape_str(x.shape())));
  if (tensors > 1)
    throw Error(fmt::format(
        "index: {} tensor indices in {} (input {}); tapegrad takes at most one (index_select, "
        "gather or a mask for the rest)",
        tensors, indices_str(indices), shape_str(x.shape())));
  if (used > x.dim())
    throw Error(fmt::format("index: too many indices for a tensor of dimension {}: {} (input {})",
                            x.dim(), indices_str(indices), shape_str(x.shape())));
  Tensor r = x;
  int64_t d = 0;  // the dim of r the next index reads
  for (const TensorIndex& i : indices) {
    switch (i.kind()) {
      case TensorIndex::Kind::Integer: {
        const int64_t size = r.shape()[d];
        const int64_t k = i.integer() < 0 ? i.integer() + size : i.integer();
        if (k < 0 || k >= size)
          throw Error(fmt::format(
              "index: index {} is out of range for dim {} of size {} (input {}, indices {})",
              i.integer(), d, size, shape_str(x.shape()), indices_str(indices)));
        r = select(r, d, k);
        break;
      }
      case TensorIndex::Kind::Slice: {
        const indexing::Slice& s = i.slice();
        if (s.step <= 0)
          throw Error(
              fmt::format("index: slice step must be positive, got {} (input {}, indices {})",
                          s.step, shape_str(x.shape()), indices_str(indices)));
        r = slice(r, d, s.start.value_or(0), s.stop.value_or(std::numeric_limits<int64_t>::max()),
                  s.step);
        ++d;
        break;
      }
      case TensorIndex::Kind::None:
        r = unsqueeze(r, d);
        ++d;
        break;
      case TensorIndex::Kind::Ellipsis:
        d += x.dim() - used;
        break;
      case TensorIndex::Kind::Tensor: {
        const Tensor& t = i.tensor();
        check_defined(t, "index", "tensor index");
        check_same_device(x, t, "index", "input", "tensor index");
        if (t.dtype() == kInt64) {
          if (t.dim() > 1)
            throw Error(
                fmt::format("index: an int64 tensor index must be 0-D or 1-D, got {} "
                            "(input {}, indices {})",
                            shape_str(t.shape()), shape_str(x.shape()), indices_str(indices)));
          r = index_select(r, d, t.reshape({-1}));
          if (t.dim() == 0)
            r = squeeze(r, d);
          else
            ++d;
        } else if (t.dtype() == kBool) {
          const int64_t m = t.dim();
          const Shape& rs = r.shape();
          const Shape want(rs.begin() + d, rs.begin() + d + m);
          if (t.shape() != want)
            throw Error(fmt::format(
                "index: bool mask {} must match the shape {} of the dims it indexes (dims {} to "
                "{} of input {})",
                shape_str(t.shape()), shape_str(want), d, d + m - 1, shape_str(x.shape())));
          Shape fs(rs.begin(), rs.begin() + d);
          fs.push_back(shape_numel(want));
          fs.insert(fs.end(), rs.begin() + d + m, rs.end());
          r = index_select(reshape(r, fs), d, true_positions(t));
          ++d;
        } else {
          throw Error(fmt::format("index: a tensor index must be int64 or bool, got {} (input {})",
                                  dtype_name(t.dtype()), shape_str(x.shape())));
        }
        break;
      }
    }
  }
  return r;
}

// x[indices] = value: a view's elements for basic indices (copy_ into the view), positions of a
// bool mask (where / scatter_add, so it records like PyTorch's index_put_).
Tensor index_put_(const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& value,
                  Site site) {
  SiteScope scope(site);
  check_defined(x, "index_put_", "self");
  check_defined(value, "index_put_", "value");
  bool has_tensor = false;
  for (const TensorIndex& i : indices) has_tensor |= i.kind() == TensorIndex::Kind::Tensor;
  if (!has_tensor) {
    Tensor v = index(x, indices);
    copy_(v, value);
    return x;
  }
  if (indices.size() != 1 || indices[0].tensor().dtype() != kBool)
    throw Error(fmt::format(
        "index_put_: indices {} (self {}): with a tensor index, only a single bool mask is "
        "supported (write through index_select's rows with scatter_add instead)",
        indices_str(indices), shape_str(x.shape())));
  const Tensor& mask = indices[0].tensor();
  if (mask.shape() != x.shape())
    throw Error(fmt::format("index_put_: bool mask {} must have self's shape {}",
                            shape_str(mask.shape()), shape_str(x.shape())));
  const Tensor pos = true_positions(mask);
  const int64_t k = pos.numel();
  Tensor v = value;
  if (v.dtype() != x.dtype()) v = v.to(x.dtype());
  if (v.device() != x.device()) v = v.to(x.device());
  // The old values, read before the write (a clone when the write is recorded).
  const Tensor old = x.requires_grad() ? x.clone() : x.detach();
  if (v.numel() == 1) {  // one value for every true position
    copy_(x, where(mask, reshape(v, {}), old));
    return x;
  }
  if (v.dim() != 1 || v.numel() != k)
    throw Error(fmt::format(
        "index_put_: value {} must have one element or one per true position of the mask ({}) "
        "(self {})",
        shape_str(value.shape()), k, shape_str(x.shape())));
  Tensor flat_mask = reshape(mask, {-1});
  Tensor zero = zeros({}, x.dtype(), x.device());
  Tensor keep = where(flat_mask, zero, reshape(old, {-1}));
  Tensor put = scatter_add(zeros({x.numel()}, x.dtype(), x.device()), 0, pos, v);
  copy_(x, reshape(add(keep, put), x.shape()));
  return x;
}
Tensor index_put_(const Tensor& x, const std::vector<TensorIndex>& indices, double value,
                  Site site) {
  SiteScope scope(site);
  check_defined(x, "index_put_", "self");
  return index_put_(x, indices, scalar_tensor(value, x.dtype(), x.device()));
}

// ---- Tensor methods ----
Tensor Tensor::index(const std::vector<TensorIndex>& indices, Site site) const {
  return tg::index(*this, indices, site);
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& value,
                           Site site) {
  tg::index_put_(*this, indices, value, site);
  return *this;
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, double value, Site site) {
  tg::index_put_(*this, indices, value, site);
  return *this;
}

}  // namespace tg
