// ops/rotary/rotary.cpp — apply_rotary, rotary position embeddings (RoFormer; the layout of
// GPT-NeoX and Hugging Face's rotate_half, or GPT-J's and Meta's interleaved pairs), forward and
// backward side by side. x (..., T at seq_dim, ..., D), cos and sin (T, R/2) with R <= D even: at
// position t the pairs of x's first R dims turn by θ[t, i],
//   half-split:  (x_i, x_{i+R/2}) → (x_i cos − x_{i+R/2} sin, x_{i+R/2} cos + x_i sin)
//   interleaved: (x_{2i}, x_{2i+1}) the same,
// and dims past R pass through (partial rotary). The backward is the rotation by −θ: dx = R(−θ)·g.
// The fused path (check → allocate → kernel pair → record: cpu::rotary, cuda::rotary) runs when
// cos and sin need no gradient, as for tables; when they do, the same formula is composed from
// views, products and cat, so autograd gives their gradients too.
// bfloat16 / float16 x: tables of its dtype or float32, turned in float32 and rounded once.
// Deliberately not here: building the tables (nn::RotaryEmbedding, nn/layers.cpp).
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/kernels.hpp"
#include "ops/ops.hpp"

namespace tg {
using namespace detail;

namespace {
constexpr const char* kOp = "apply_rotary";

struct RotaryDims {
  int64_t outer, T, inner, D, R;
};

RotaryDims check_rotary(const Tensor& x, const Tensor& cos, const Tensor& sin, int64_t& seq_dim) {
  check_float(x, kOp, "x", true);
  check_float(cos, kOp, "cos", true);
  check_float(sin, kOp, "sin", true);
  check_same_device(x, cos, kOp, "x", "cos");
  check_same_device(x, sin, kOp, "x", "sin");
  // bfloat16 / float16 x takes tables of its dtype or float32 (nn::RotaryEmbedding's buffers)
  if (!(is_reduced(x.dtype()) && cos.dtype() == kFloat32))
    check_same_dtype(x, cos, kOp, "x", "cos");
  if (!(is_reduced(x.dtype()) && sin.dtype() == kFloat32))
    check_same_dtype(x, sin, kOp, "x", "sin");
  const Shape& s = x.shape();
  const int64_t nd = static_cast<int64_t>(s.size());
  if (nd < 2)
    throw Error(fmt::format("{}: x {} needs a position dim and a feature dim", kOp, shape_str(s)));
  const int64_t sd = seq_dim < 0 ? seq_dim + nd : seq_dim;
  if (sd < 0 || sd > nd - 2)
    throw Error(
        fmt::format("{}: seq_dim {} out of range for x {}: expected [{}, {}] (not the "
                    "feature dim)",
                    kOp, seq_dim, shape_str(s), -nd, nd - 2));
  seq_dim = sd;
  if (cos.shape().size() != 2 || cos.shape() != sin.shape())
    throw Error(fmt::format("{}: cos {} and sin {} must both be (T, R/2); x {}", kOp,
                            shape_str(cos.shape()), shape_str(sin.shape()), shape_str(s)));
  RotaryDims d{1, s[sd], 1, s.back(), 2 * cos.shape()[1]};
  for (int64_t i = 0; i < sd; ++i) d.outer *= s[i];
  for (int64_t i = sd + 1; i < nd - 1; ++i) d.inner *= s[i];
  if (cos.shape()[0] != d.T || d.R > d.D)
    throw Error(
        fmt::format("{}: cos and sin {} must be (T, R/2) with T = x's dim {} ({}) and "
                    "R <= D ({}); x {}",
                    kOp, shape_str(cos.shape()), sd, d.T, d.D, shape_str(s)));
  return d;
}

// out = R(±θ)·x on either backend (inverse: −θ).
Tensor rotary_kernel(const Tensor& x_in, const Tensor& cos, const Tensor& sin, const RotaryDims& d,
                     bool interleaved, bool inverse) {
  const Tensor x = contig(x_in);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.numel() == 0) return out;
  kernels(kOp, x).rotary(cdt(x.dtype()), out.data_ptr(), x.data_ptr(), cos.data_ptr(),
                         sin.data_ptr(), d.outer, d.T, d.inner, d.D, d.R, interleaved, inverse);
  return out;
}

// The same rotation from recorded ops, for cos and sin that need gradients.
Tensor rotary_composed(const Tensor& x, const Tensor& cos, const Tensor& sin, const RotaryDims& d,
                       bool interleaved, int64_t seq_dim) {
  const int64_t nd = static_cast<int64_t>(x.shape().size()), h = d.R / 2;
  // cos, sin (T, h) viewed to broadcast against x's (..., T, ..., h)
  Shape bs(static_cast<size_t>(nd), 1);
  bs[static_cast<size_t>(seq_dim)] = d.T;
  bs.back() = h;
  const Tensor c = reshape(cos, bs), s = reshape(sin, bs);
  Tensor a, b;
  if (interleaved) {
    Shape ps = x.shape();
    ps.back() = h;
    ps.push_back(2);
    const Tensor pairs = reshape(narrow(x, -1, 0, d.R), ps);
    a = select(pairs, -1, 0);
    b = select(pairs, -1, 1);
  } else {
    a = narrow(x, -1, 0, h);
    b = narrow(x, -1, h, h);
  }
  const Tensor ra = a * c - b * s, rb = b * c + a * s;
  Tensor rot;
  if (interleaved) {
    Shape rs = x.shape();
    rs.back() = d.R;
    rot = reshape(stack({ra, rb}, -1), rs);
  } else {
    rot = cat({ra, rb}, -1);
  }
  return d.R == d.D ? rot : cat({rot, narrow(x, -1, d.R, d.D - d.R)}, -1);
}
}  // namespace

Tensor apply_rotary(const Tensor& x, const Tensor& cos_in, const Tensor& sin_in, bool interleaved,
                    int64_t seq_dim, Site site) {
  SiteScope scope(site);
  const RotaryDims d = check_rotary(x, cos_in, sin_in, seq_dim);
  if (needs_record({&cos_in, &sin_in}))
    return rotary_composed(x, cos_in, sin_in, d, interleaved, seq_dim);
  // the kernels read float32 tables for a bfloat16 / float16 x (exact for reduced tables)
  const DType tdt = is_reduced(x.dtype()) ? kFloat32 : x.dtype();
  const Tensor cos = contig(cos_in).detach().to(tdt), sin = contig(sin_in).detach().to(tdt);
  Tensor out = rotary_kernel(x, cos, sin, d, interleaved, false);
  if (needs_record({&x})) {
    const double n = static_cast<double>(x.numel());
    RecordInfo info = RecordInfo().flops(3 * n, 3 * n);
    Saved hc = info.save(cos), hs = info.save(sin);
    record(kOp, out, {x}, info.differentiable(),
           [hc, hs, d, interleaved, seq_dim](const Tensor& g) -> std::vector<Tensor> {
             const Tensor cos = hc.get(), sin = hs.get();
             // the rotation by −θ; its adjoint is the rotation by θ, the op itself
             return {record_adjoint("apply_rotary_backward",
                                    rotary_kernel(g, cos, sin, d, interleaved, true), g,
                                    [cos, sin, interleaved, seq_dim](const Tensor& gg) {
                                      return apply_rotary(gg, cos, sin, interleaved, seq_dim);
                                    })};
           });
  }
  return out;
}

}  // namespace tg
