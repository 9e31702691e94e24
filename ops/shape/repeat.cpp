// ops/shape/repeat.cpp — the shape ops that reorder or repeat elements: flip, roll, repeat,
// repeat_interleave, pad (constant, reflect, replicate, circular), unflatten and meshgrid, with
// PyTorch's names and semantics. Each is composed from views, expand, index_select and cat, so its
// backward is theirs (index_select's scatter-adds the repeated or reflected elements' gradients).
// Deliberately not here: the views themselves (ops/shape/views.cpp).
#include "ops/core/detail.hpp"
#include "ops/ops.hpp"

#include <fmt/ranges.h>

#include <algorithm>

namespace tg {
using namespace detail;

namespace {
// d wrapped into [0, ndim); a 0-dim input takes dims 0 and -1 (flip, PyTorch's rule).
int64_t wrap_dim(const char* op, int64_t d, const Tensor& x) {
  const int64_t nd = x.dim();
  if (d < -std::max<int64_t>(nd, 1) || d >= std::max<int64_t>(nd, 1))
    throw Error(fmt::format("{}: dim {} out of range for input {}: expected [{}, {}]", op, d,
                            shape_str(x.shape()), -std::max<int64_t>(nd, 1),
                            std::max<int64_t>(nd, 1) - 1));
  return d < 0 ? d + std::max<int64_t>(nd, 1) : d;  // 0-dim: dim 0
}
// The same for ops that take no dim of a 0-dim input (roll, repeat_interleave, unflatten).
int64_t real_dim(const char* op, int64_t d, const Tensor& x) {
  if (x.dim() == 0)
    throw Error(
        fmt::format("{}: dim {} specified but input () is 0-dim and has no dimensions", op, d));
  return wrap_dim(op, d, x);
}
// a + b and a · b of sizes, or a tg::Error naming op and what the size is of.
int64_t add_size(const char* op, int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(fmt::format("{}: {} overflows int64 ({} + {})", op, what, a, b));
  return r;
}
int64_t mul_size(const char* op, int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(fmt::format("{}: {} overflows int64 ({} x {})", op, what, a, b));
  return r;
}
// The element count of an output shape, checked before anything is allocated.
void check_numel(const char* op, const Shape& s, const Tensor& x) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n) && std::find(s.begin(), s.end(), 0) == s.end())
      throw Error(fmt::format("{}: the output shape {} has more than 2^63 elements (input {})", op,
                              shape_str(s), shape_str(x.shape())));
}
// 0 .. n-1 mapped by f, as an int64 index on x's device (written into the tensor's own storage:
// a size too large to allocate is a tg::Error, not std::bad_alloc).
template <typename F>
Tensor index_of(int64_t n, const Tensor& x, F&& f) {
  Tensor t = Tensor::empty({n}, kInt64);
  int64_t* p = t.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) p[i] = f(i);
  return t.to(x.device());
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
    if (x.dim() == 0) continue;  // a 0-dim input flips to itself (dims [], [0] or [-1])
    const int64_t n = x.size(d);
    y = index_select(y, d, index_of(n, x, [n](int64_t i) { return n - 1 - i; }));
  }
  return y.same(x) ? x.clone() : y;  // a new tensor, as PyTorch's
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
    const int64_t d = real_dim("roll", dims[k], x), n = x.size(d);
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
    out.push_back(mul_size(
        "repeat", sizes[static_cast<size_t>(d)], s1[static_cast<size_t>(d)],
        fmt::format("the size of dim {} (repeats {}, input {})", d, sizes, shape_str(x.shape()))));
  }
  check_numel("repeat", out, x);
  return reshape(expand(reshape(x1, pairs), expanded).contiguous(), out);
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim, Site site) {
  SiteScope scope(site);
  constexpr const char* op = "repeat_interleave";
  check_defined(x, op, "input");
  if (repeats < 0)
    throw Error(fmt::format("{}: repeats must be >= 0, got {} (input {})", op, repeats,
                            shape_str(x.shape())));
  if (!dim) return repeat_interleave(reshape(x, {-1}), repeats, 0);
  const int64_t d = real_dim(op, *dim, x);
  Shape s = x.shape(), e = x.shape(), out = x.shape();
  s.insert(s.begin() + d + 1, 1);
  e.insert(e.begin() + d + 1, repeats);
  out[static_cast<size_t>(d)] =
      mul_size(op, out[static_cast<size_t>(d)], repeats,
               fmt::format("the size of dim {} (input {})", d, shape_str(x.shape())));
  check_numel(op, out, x);
  return reshape(expand(reshape(x, s), e).contiguous(), out);
}

// repeats: int64, one per element of dim, or one (0-dim or (1)) for all of them, as PyTorch's.
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim,
                         Site site) {
  SiteScope scope(site);
  constexpr const char* op = "repeat_interleave";
  check_defined(x, op, "input");
  check_defined(repeats, op, "repeats");
  if (!dim) return repeat_interleave(reshape(x, {-1}), repeats, 0);
  const int64_t d = real_dim(op, *dim, x), n = x.size(d);
  if (repeats.dtype() != kInt64 || repeats.dim() > 1 ||
      (repeats.numel() != n && repeats.numel() != 1))
    throw Error(fmt::format(
        "{}: repeats {} ({}) must be int64 of shape ({}), one per element of dim {} of input {}, "
        "or hold one value",
        op, shape_str(repeats.shape()), dtype_name(repeats.dtype()), n, *dim,
        shape_str(x.shape())));
  const std::vector<int64_t> r = repeats.to(kCPU).to_vector<int64_t>();
  if (r.size() == 1 && n != 1) return repeat_interleave(x, r[0], dim);
  int64_t total = 0;  // checked before the index is allocated
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ri = r[static_cast<size_t>(i)];
    if (ri < 0)
      throw Error(fmt::format("{}: repeats must be >= 0, got {} at {} (input {})", op, ri, i,
                              shape_str(x.shape())));
    total = add_size(
        op, total, ri,
        fmt::format("the total of repeats along dim {} of input {}", d, shape_str(x.shape())));
  }
  Shape out = x.shape();
  out[static_cast<size_t>(d)] = total;
  check_numel(op, out, x);
  Tensor idx = Tensor::empty({total}, kInt64);
  int64_t* pi = idx.data<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < r[static_cast<size_t>(i)]; ++k) *pi++ = i;
  return index_select(x, d, idx.to(x.device()));
}

namespace {
// The checks of one padded dim (size n, pads lo and hi, output size m), PyTorch 1.13's rules:
// constant and circular crop at most the dim; constant gives m >= 0, replicate and reflect
// m >= 1 (reflect: each pad < n); circular wraps the cropped dim (size c), each pad at most c
// (beyond that 1.13 fails inside or returns uninitialised memory).
void check_pad_dim(const std::string& mode, const std::vector<int64_t>& pads, int64_t d, int64_t n,
                   int64_t lo, int64_t hi, int64_t m, const Tensor& x) {
  const std::string where =
      fmt::format("dim {} of size {}, pads {}, input {}", d, n, pads, shape_str(x.shape()));
  const bool crops_within = lo >= -n && hi >= -n;
  if ((mode == "constant" || mode == "circular") && !crops_within)
    throw Error(fmt::format("pad: {} padding ({}, {}) crops more than the dim holds ({})", mode, lo,
                            hi, where));
  if (mode == "reflect" && (lo >= n || hi >= n))
    throw Error(fmt::format("pad: reflect padding ({}, {}) must be less than the dim's size ({})",
                            lo, hi, where));
  const int64_t least = mode == "constant" || mode == "circular" ? 0 : 1;
  if (m < least || (mode == "replicate" && n == 0))
    throw Error(
        fmt::format("pad: {} padding ({}, {}) gives an output size {}; it must be at least {} ({})",
                    mode, lo, hi, m, least, where));
  const int64_t c = n + std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0);
  if (mode == "circular" && (lo > c || hi > c))
    throw Error(fmt::format(
        "pad: circular padding ({}, {}) wraps around more than once: each pad must be at most "
        "the size {} left after cropping ({})",
        lo, hi, c, where));
}

// Output position i of a padded dim reads input position j = i - lo, reflected or clamped
// at the edges (reflect, replicate); circular reads the cropped dim, wrapped.
Tensor pad_index(const std::string& mode, int64_t n, int64_t lo, int64_t hi, int64_t m,
                 const Tensor& x) {
  if (mode == "circular") {
    const int64_t s0 = std::max<int64_t>(-lo, 0), l = std::max<int64_t>(lo, 0),
                  c = n + std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0);
    return index_of(m, x, [=](int64_t i) { return s0 + ((i - l) % c + c) % c; });
  }
  const bool reflect = mode == "reflect";
  const int64_t end = n + lo;  // j >= n from here (n + lo was checked not to overflow)
  return index_of(m, x, [=](int64_t i) -> int64_t {
    if (i < lo) return reflect ? lo - i : 0;  // j < 0 (replicate: clamped to the edge)
    if (i >= end) return reflect ? 2 * (n - 1) - (i - lo) : n - 1;  // reflect: edge not repeated
    return i - lo;
  });
}

// Constant padding of dim d: the crop (a narrow view), then `value` blocks on either side.
Tensor pad_constant(const Tensor& y, int64_t d, int64_t lo, int64_t hi, double value) {
  const int64_t n = y.size(d);
  const int64_t keep = n + std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0);
  Tensor c = keep == n ? y : narrow(y, d, std::max<int64_t>(-lo, 0), keep);
  std::vector<Tensor> parts;
  Shape ps = c.shape();
  if (lo > 0) {
    ps[static_cast<size_t>(d)] = lo;
    parts.push_back(full(ps, value, y.dtype(), y.device()));
  }
  parts.push_back(c);
  if (hi > 0) {
    ps[static_cast<size_t>(d)] = hi;
    parts.push_back(full(ps, value, y.dtype(), y.device()));
  }
  return parts.size() == 1 ? c : cat(parts, d);
}
}  // namespace

// pads: (left, right) for the last dim, then the dim before it, … (torch.nn.functional.pad); a
// negative pad crops, in every mode (check_pad_dim has each mode's limits).
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
  Shape out = x.shape();  // every dim checked before anything is allocated
  for (int64_t k = 0; k < np / 2; ++k) {
    const int64_t d = nd - 1 - k, n = x.size(d);
    const int64_t lo = pads[static_cast<size_t>(2 * k)], hi = pads[static_cast<size_t>(2 * k + 1)];
    const std::string what = fmt::format("the padded size of dim {} (pads {})", d, pads);
    out[static_cast<size_t>(d)] = add_size("pad", add_size("pad", n, lo, what), hi, what);
    check_pad_dim(mode, pads, d, n, lo, hi, out[static_cast<size_t>(d)], x);
  }
  check_numel("pad", out, x);
  Tensor y = x;
  for (int64_t k = 0; k < np / 2; ++k) {
    const int64_t d = nd - 1 - k, n = x.size(d);
    const int64_t lo = pads[static_cast<size_t>(2 * k)], hi = pads[static_cast<size_t>(2 * k + 1)];
    if (lo == 0 && hi == 0) continue;
    y = mode == "constant" ? pad_constant(y, d, lo, hi, value)
                           : index_select(y, d, pad_index(mode, n, lo, hi, out[d], x));
  }
  return y;
}

// dim of size n becomes `sizes` (one of them -1: inferred), PyTorch's rules and words.
Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes, Site site) {
  SiteScope scope(site);
  constexpr const char* op = "unflatten";
  check_defined(x, op, "input");
  const int64_t d = real_dim(op, dim, x), n = x.size(d);
  if (sizes.empty())
    throw Error(fmt::format("{}: sizes must be non-empty (dim {} of input {})", op, dim,
                            shape_str(x.shape())));
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < -1 || (sizes[i] == -1 && infer >= 0))
      throw Error(fmt::format("{}: sizes {}: {} (dim {} of input {})", op, shape_str(sizes),
                              sizes[i] < -1 ? fmt::format("invalid size {}", sizes[i])
                                            : std::string("only one size can be inferred (-1)"),
                              dim, shape_str(x.shape())));
    if (sizes[i] == -1) {
      infer = static_cast<int64_t>(i);
    } else {
      known = mul_size(op, known, sizes[i], fmt::format("the product of sizes {}", sizes));
    }
  }
  Shape ss = sizes;
  if (infer >= 0 && known == 0)
    throw Error(
        fmt::format("{}: sizes {}: the -1 is ambiguous beside a size 0 (dim {} of input "
                    "{})",
                    op, shape_str(sizes), dim, shape_str(x.shape())));
  if (infer >= 0) ss[static_cast<size_t>(infer)] = n / known;
  if (shape_numel(ss) != n)
    throw Error(fmt::format("{}: sizes {} don't multiply up to the size {} of dim {} of input {}",
                            op, shape_str(sizes), n, dim, shape_str(x.shape())));
  Shape out(x.shape().begin(), x.shape().begin() + d);
  out.insert(out.end(), ss.begin(), ss.end());
  out.insert(out.end(), x.shape().begin() + d + 1, x.shape().end());
  return reshape(x, out);
}

// 0-D or 1-D tensors (n0), (n1), … (a 0-D one counts as (1), as in PyTorch) → each expanded to
// (n0, n1, …) ("ij"), or with the first two dims swapped ("xy": NumPy's and Matplotlib's
// convention). One dtype and device for all, as PyTorch's.
std::vector<Tensor> meshgrid(const std::vector<Tensor>& xs, const std::string& indexing,
                             Site site) {
  SiteScope scope(site);
  constexpr const char* op = "meshgrid";
  if (indexing != "ij" && indexing != "xy")
    throw Error(fmt::format("{}: indexing must be \"ij\" or \"xy\", got \"{}\"", op, indexing));
  if (xs.empty()) throw Error(fmt::format("{}: expects a non-empty list of tensors", op));
  Shape full_shape;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& t = xs[i];
    check_defined(t, op, "tensor");
    if (t.dim() > 1)
      throw Error(fmt::format("{}: every tensor must be 0-D or 1-D, got {} at {}", op,
                              shape_str(t.shape()), i));
    if (t.dtype() != xs[0].dtype() || t.device() != xs[0].device())
      throw Error(
          fmt::format("{}: tensor {} at {} is {} on {}, tensor 0 {} is {} on {}: all must "
                      "have one dtype and device",
                      op, shape_str(t.shape()), i, dtype_name(t.dtype()), t.device().str(),
                      shape_str(xs[0].shape()), dtype_name(xs[0].dtype()), xs[0].device().str()));
    full_shape.push_back(t.numel());
  }
  const bool xy = indexing == "xy" && xs.size() >= 2;
  if (xy) std::swap(full_shape[0], full_shape[1]);
  check_numel(op, full_shape, xs[0]);
  std::vector<Tensor> out;
  for (size_t i = 0; i < xs.size(); ++i) {
    size_t at = i;
    if (xy && i < 2) at = 1 - i;
    Shape s(xs.size(), 1);
    s[at] = xs[i].numel();
    out.push_back(expand(reshape(xs[i], s), full_shape));
  }
  return out;
}

}  // namespace tg
