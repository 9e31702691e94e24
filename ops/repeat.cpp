// ops/repeat.cpp — the shape ops that reorder or repeat elements: flip, roll, repeat,
// repeat_interleave, pad (constant, reflect, replicate, circular), unflatten and meshgrid, with
// PyTorch's names and semantics. Each is composed from views, expand, index_select and cat, so its
// backward is theirs (index_select's scatter-adds the repeated or reflected elements' gradients).
// Deliberately not here: the views themselves (ops/shape.cpp).
#include "ops/detail.hpp"
#include "ops/ops.hpp"

#include <fmt/ranges.h>

namespace tg {
using namespace detail;

namespace {
int64_t wrap_dim(const char* op, int64_t d, const Tensor& x) {
  const int64_t nd = x.dim();
  if (d < -std::max<int64_t>(nd, 1) || d >= std::max<int64_t>(nd, 1))
    throw Error(fmt::format("{}: dim {} out of range for input {}: expected [{}, {}]", op, d,
                            shape_str(x.shape()), -std::max<int64_t>(nd, 1),
                            std::max<int64_t>(nd, 1) - 1));
  return d < 0 ? d + nd : d;
}
// 0 .. n-1 mapped by f, as an int64 index on x's device.
template <typename F>
Tensor index_of(int64_t n, const Tensor& x, F&& f) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = f(i);
  return tensor(v, {n}).to(x.device());
}
}  // namespace

Tensor flip(const Tensor& x, std::vector<int64_t> dims, Site site) {
  SiteScope scope(site);
  check_defined(x, "flip", "input");
  Tensor y = x;
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(x.dim(), 1)), false);
  for (int64_t d0 : dims) {
    const int64_t d = wrap_dim("flip", d0, x);
    if (seen[static_cast<size_t>(d)])
      throw Error(fmt::format("flip: dim {} appears more than once in dims {} (input {})", d0, dims,
                              shape_str(x.shape())));
    seen[static_cast<size_t>(d)] = true;
    const int64_t n = x.size(d);
    y = index_select(y, d, index_of(n, x, [n](int64_t i) { return n - 1 - i; }));
  }
  return y;
}

Tensor roll(const Tensor& x, std::vector<int64_t> shifts, std::vector<int64_t> dims, Site site) {
  SiteScope scope(site);
  check_defined(x, "roll", "input");
  if (dims.empty()) {  // over the flattened tensor, then back
    if (shifts.size() != 1)
      throw Error(fmt::format("roll: without dims, shifts must hold one value, got {} (input {})",
                              shifts, shape_str(x.shape())));
    return reshape(roll(reshape(x, {-1}), shifts, {0}), x.shape());
  }
  if (shifts.size() != dims.size())
    throw Error(fmt::format("roll: shifts {} and dims {} must have the same length (input {})",
                            shifts, dims, shape_str(x.shape())));
  Tensor y = x;
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = wrap_dim("roll", dims[k], x), n = x.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[k] % n) + n) % n;
    if (s == 0) continue;
    y = cat({narrow(y, d, n - s, s), narrow(y, d, 0, n - s)}, d);
  }
  return y;
}

Tensor repeat(const Tensor& x, std::vector<int64_t> sizes, Site site) {
  SiteScope scope(site);
  check_defined(x, "repeat", "input");
  const int64_t nd = x.dim(), nr = static_cast<int64_t>(sizes.size());
  if (nr < nd)
    throw Error(fmt::format("repeat: {} repeats {} cannot be fewer than the {} dims of input {}",
                            nr, sizes, nd, shape_str(x.shape())));
  for (int64_t r : sizes)
    if (r < 0)
      throw Error(
          fmt::format("repeat: repeats {} must be >= 0 (input {})", sizes, shape_str(x.shape())));
  // leading dims of size 1, then each dim d as (r_d, n_d) expanded and merged
  Shape lead(static_cast<size_t>(nr - nd), 1);
  Shape s1 = lead;
  s1.insert(s1.end(), x.shape().begin(), x.shape().end());
  const Tensor x1 = reshape(x, s1);
  Shape pairs, expanded, out;
  for (int64_t d = 0; d < nr; ++d) {
    pairs.push_back(1);
    pairs.push_back(s1[static_cast<size_t>(d)]);
    expanded.push_back(sizes[static_cast<size_t>(d)]);
    expanded.push_back(s1[static_cast<size_t>(d)]);
    out.push_back(sizes[static_cast<size_t>(d)] * s1[static_cast<size_t>(d)]);
  }
  return reshape(expand(reshape(x1, pairs), expanded).contiguous(), out);
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim, Site site) {
  SiteScope scope(site);
  check_defined(x, "repeat_interleave", "input");
  if (repeats < 0)
    throw Error(fmt::format("repeat_interleave: repeats must be >= 0, got {} (input {})", repeats,
                            shape_str(x.shape())));
  if (!dim) return repeat_interleave(reshape(x, {-1}), repeats, 0);
  const int64_t d = wrap_dim("repeat_interleave", *dim, x);
  Shape s = x.shape(), e = x.shape(), out = x.shape();
  s.insert(s.begin() + d + 1, 1);
  e.insert(e.begin() + d + 1, repeats);
  out[static_cast<size_t>(d)] *= repeats;
  return reshape(expand(reshape(x, s), e).contiguous(), out);
}

Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim,
                         Site site) {
  SiteScope scope(site);
  check_defined(x, "repeat_interleave", "input");
  check_defined(repeats, "repeat_interleave", "repeats");
  if (!dim) return repeat_interleave(reshape(x, {-1}), repeats, 0);
  const int64_t d = wrap_dim("repeat_interleave", *dim, x), n = x.size(d);
  if (repeats.dtype() != kInt64 || repeats.dim() != 1 || repeats.size(0) != n)
    throw Error(fmt::format(
        "repeat_interleave: repeats {} ({}) must be int64 of shape ({}), one "
        "per element of dim {} of input {}",
        shape_str(repeats.shape()), dtype_name(repeats.dtype()), n, *dim, shape_str(x.shape())));
  const std::vector<int64_t> r = repeats.to(kCPU).to_vector<int64_t>();
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < n; ++i) {
    if (r[static_cast<size_t>(i)] < 0)
      throw Error(fmt::format("repeat_interleave: repeats must be >= 0, got {} at {} (input {})",
                              r[static_cast<size_t>(i)], i, shape_str(x.shape())));
    for (int64_t k = 0; k < r[static_cast<size_t>(i)]; ++k) idx.push_back(i);
  }
  const int64_t m = static_cast<int64_t>(idx.size());
  return index_select(x, d, tensor(idx, {m}).to(x.device()));
}

// pads: (left, right) for the last dim, then the dim before it, … (torch.nn.functional.pad).
Tensor pad(const Tensor& x, std::vector<int64_t> pads, const std::string& mode, double value,
           Site site) {
  SiteScope scope(site);
  check_defined(x, "pad", "input");
  const int64_t nd = x.dim(), np = static_cast<int64_t>(pads.size());
  if (np % 2 != 0 || np / 2 > nd)
    throw Error(fmt::format("pad: pads {} must hold pairs for at most the {} dims of input {}",
                            pads, nd, shape_str(x.shape())));
  if (mode != "constant" && mode != "reflect" && mode != "replicate" && mode != "circular")
    throw Error(
        fmt::format("pad: mode \"{}\" is not one of constant, reflect, replicate, "
                    "circular (input {})",
                    mode, shape_str(x.shape())));
  Tensor y = x;
  for (int64_t k = 0; k < np / 2; ++k) {
    const int64_t d = nd - 1 - k, n = y.size(d);
    const int64_t lo = pads[static_cast<size_t>(2 * k)], hi = pads[static_cast<size_t>(2 * k + 1)];
    if (lo == 0 && hi == 0) continue;
    if (mode == "constant") {
      // negative pads crop, as in PyTorch
      if (lo < 0) y = narrow(y, d, -lo, y.size(d) + lo);
      if (hi < 0) y = narrow(y, d, 0, y.size(d) + hi);
      std::vector<Tensor> parts;
      Shape ps = y.shape();
      if (lo > 0) {
        ps[static_cast<size_t>(d)] = lo;
        parts.push_back(full(ps, value, y.dtype(), y.device()));
      }
      parts.push_back(y);
      if (hi > 0) {
        ps[static_cast<size_t>(d)] = hi;
        parts.push_back(full(ps, value, y.dtype(), y.device()));
      }
      y = parts.size() == 1 ? y : cat(parts, d);
      continue;
    }
    const bool reflect = mode == "reflect", circular = mode == "circular";
    if (lo < 0 || hi < 0 || n == 0 || (reflect && (lo >= n || hi >= n)) ||
        (circular && (lo > n || hi > n)))
      throw Error(fmt::format("pad: {} padding {} of dim {} must be in [0, {}] for input {}", mode,
                              pads, d, reflect ? n - 1 : n, shape_str(x.shape())));
    const int64_t m = n + lo + hi;
    y = index_select(y, d, index_of(m, x, [=](int64_t i) -> int64_t {
                       const int64_t j = i - lo;  // position in the unpadded dim
                       if (j >= 0 && j < n) return j;
                       if (circular) return ((j % n) + n) % n;
                       if (!reflect) return j < 0 ? 0 : n - 1;  // replicate
                       return j < 0 ? -j : 2 * (n - 1) - j;     // reflect (edge not repeated)
                     }));
  }
  return y;
}

Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes, Site site) {
  SiteScope scope(site);
  check_defined(x, "unflatten", "input");
  const int64_t d = wrap_dim("unflatten", dim, x);
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1 && infer < 0) {
      infer = static_cast<int64_t>(i);
    } else {
      known *= sizes[i];
    }
  }
  Shape ss = sizes;
  if (infer >= 0 && known > 0) ss[static_cast<size_t>(infer)] = x.size(d) / known;
  if (sizes.empty() || shape_numel(ss) != x.size(d))
    throw Error(
        fmt::format("unflatten: sizes {} must multiply to the size {} of dim {} of input "
                    "{}",
                    shape_str(sizes), x.size(d), dim, shape_str(x.shape())));
  Shape out(x.shape().begin(), x.shape().begin() + d);
  out.insert(out.end(), ss.begin(), ss.end());
  out.insert(out.end(), x.shape().begin() + d + 1, x.shape().end());
  return reshape(x, out);
}

// 1-D tensors (n0), (n1), … → each expanded to (n0, n1, …) ("ij"), or with the first two dims
// swapped ("xy": NumPy's and Matplotlib's convention).
std::vector<Tensor> meshgrid(const std::vector<Tensor>& xs, const std::string& indexing,
                             Site site) {
  SiteScope scope(site);
  if (indexing != "ij" && indexing != "xy")
    throw Error(fmt::format("meshgrid: indexing must be \"ij\" or \"xy\", got \"{}\"", indexing));
  Shape full_shape;
  for (const Tensor& t : xs) {
    check_defined(t, "meshgrid", "tensor");
    if (t.dim() != 1)
      throw Error(fmt::format("meshgrid: every tensor must be 1-D, got {}", shape_str(t.shape())));
    full_shape.push_back(t.size(0));
  }
  const bool xy = indexing == "xy" && xs.size() >= 2;
  if (xy) std::swap(full_shape[0], full_shape[1]);
  std::vector<Tensor> out;
  for (size_t i = 0; i < xs.size(); ++i) {
    size_t at = i;
    if (xy && i < 2) at = 1 - i;
    Shape s(xs.size(), 1);
    s[at] = xs[i].size(0);
    out.push_back(expand(reshape(xs[i], s), full_shape));
  }
  return out;
}

}  // namespace tg
