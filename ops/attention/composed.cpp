// ops/attention/composed.cpp — the attention forms built on top of other ops: the seed articles'
// attention(Q, K, V, mask) (reshapes around one fused scaled_dot_product_attention call, weights
// returned), additive (Bahdanau) attention, composed from linear, tanh, matmul, masked_fill and
// softmax (its backward is theirs), and scaled dot-product attention itself as ops
// (composed_sdpa: the CUDA path's fallback and create_graph's for differentiable masks and
// biases). All take CUDA tensors (masks on either device). Deliberately not here: the fused op
// (sdpa.cpp, cuda.cpp), the mask description (mask.cpp), modules (nn/attention.cpp).
#include "ops/attention/internal.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/ops.hpp"

#include <limits>
#include <memory>

namespace tg {
using namespace detail;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

// ---- the seed form ----
namespace {
constexpr const char* kSeed = "attention";

// (..., N, C) with 2 to 4 dims -> (B, NH, N, C): (N, C) -> (1, 1, N, C), (B, N, C) -> (B, 1, N, C).
Tensor to_4d(const Tensor& x) {
  if (x.dim() == 2) return x.unsqueeze(0).unsqueeze(0);
  if (x.dim() == 3) return x.unsqueeze(1);
  return x;
}

// The seed's mask (mask == 0 blocked), broadcastable to (..., T, S), as a 4-D-aligned tensor.
Tensor seed_mask_4d(const Tensor& mask, const Tensor& Q, int64_t S) {
  check_defined(mask, kSeed, "mask");
  Shape want(Q.shape().begin(), Q.shape().end() - 1);
  want.push_back(S);  // (..., T, S)
  bool ok = mask.dim() <= static_cast<int64_t>(want.size());
  for (int64_t i = 0; ok && i < mask.dim(); ++i) {
    const int64_t m = mask.size(mask.dim() - 1 - i), w = want[want.size() - 1 - i];
    ok = m == 1 || m == w;
  }
  if (!ok)
    throw Error(
        fmt::format("{}: mask {} does not broadcast to (..., T, S) = {} (mask == 0 is blocked)",
                    kSeed, shape_str(mask.shape()), shape_str(want)));
  Tensor m = mask.detach();
  while (m.dim() < 2) m = m.unsqueeze(0);
  if (want.size() == 3 && m.dim() == 3) m = m.unsqueeze(1);  // (B, T, S) -> (B, 1, T, S)
  return m;
}
}  // namespace

// Fully masked rows give output 0 and weights 0 (the seed's masked_fill(-1e9) gave a uniform row).
std::pair<Tensor, Tensor> attention(const Tensor& Q, const Tensor& K, const Tensor& V,
                                    const Tensor& mask, Site site) {
  SiteScope scope(site);
  check_float(Q, kSeed, "Q", true);  // any device: the fused call below has both backends
  check_float(K, kSeed, "K", true);
  check_float(V, kSeed, "V", true);
  const std::string shapes = fmt::format("Q {}, K {}, V {}", shape_str(Q.shape()),
                                         shape_str(K.shape()), shape_str(V.shape()));
  const int64_t n = Q.dim();
  if (n < 2 || n > 4 || K.dim() != n || V.dim() != n)
    throw Error(
        fmt::format("{}: {}: expected Q (..., T, hs), K (..., S, hs), V (..., S, hs_v) with "
                    "the same 2 to 4 dims",
                    kSeed, shapes));
  for (int64_t i = 0; i < n - 2; ++i)
    if (K.size(i) != Q.size(i) || V.size(i) != Q.size(i))
      throw Error(fmt::format("{}: {}: leading dims differ", kSeed, shapes));
  if (K.size(-1) != Q.size(-1))
    throw Error(fmt::format("{}: {}: head size hs of Q ({}) and K ({}) differ", kSeed, shapes,
                            Q.size(-1), K.size(-1)));
  if (V.size(-2) != K.size(-2))
    throw Error(fmt::format("{}: {}: key length S of K ({}) and V ({}) differ", kSeed, shapes,
                            K.size(-2), V.size(-2)));
  const int64_t S = K.size(-2);
  AttentionMask m =
      mask.defined() ? AttentionMask::from_seed(seed_mask_4d(mask, Q, S)) : AttentionMask();
  SDPAOptions opts;
  opts.need_weights = true;
  AttentionResult r = scaled_dot_product_attention(to_4d(Q), to_4d(K), to_4d(V), m, opts);
  Shape out_shape(Q.shape().begin(), Q.shape().end() - 1), w_shape = out_shape;
  out_shape.push_back(V.size(-1));
  w_shape.push_back(S);
  return {r.output.reshape(out_shape), r.weights.reshape(w_shape)};
}

// ---- additive (Bahdanau) attention, composed from ops ----
namespace {
constexpr const char* kAdd = "additive_attention";

void check_additive(const Tensor& q, const Tensor& k, const Tensor& values, const Tensor& W_q,
                    const Tensor& W_k, const Tensor& v) {
  const char* names[] = {"q", "k", "values", "W_q", "W_k", "v"};
  const Tensor* ts[] = {&q, &k, &values, &W_q, &W_k, &v};
  for (int i = 0; i < 6; ++i) {
    check_float(*ts[i], kAdd, names[i], true);  // any device: composed from ops
    check_same_dtype(q, *ts[i], kAdd, "q", names[i]);
    check_same_device(q, *ts[i], kAdd, "q", names[i]);
  }
  const std::string shapes =
      fmt::format("q {}, k {}, values {}, W_q {}, W_k {}, v {}", shape_str(q.shape()),
                  shape_str(k.shape()), shape_str(values.shape()), shape_str(W_q.shape()),
                  shape_str(W_k.shape()), shape_str(v.shape()));
  const char* layout =
      "expected q (B, T, Cq), k (B, S, Ck), values (B, S, Cv), W_q (H, Cq), W_k (H, Ck), v (H)";
  bool ok = q.dim() == 3 && k.dim() == 3 && values.dim() == 3 && W_q.dim() == 2 && W_k.dim() == 2 &&
            v.dim() == 1;
  ok = ok && k.size(0) == q.size(0) && values.size(0) == q.size(0) && values.size(1) == k.size(1) &&
       W_q.size(1) == q.size(2) && W_k.size(1) == k.size(2) && W_k.size(0) == W_q.size(0) &&
       v.size(0) == W_q.size(0);
  if (!ok) throw Error(fmt::format("{}: {}: {}", kAdd, shapes, layout));
}
}  // namespace

std::pair<Tensor, Tensor> additive_attention(const Tensor& q, const Tensor& k, const Tensor& values,
                                             const Tensor& W_q, const Tensor& W_k, const Tensor& v,
                                             const AttentionMask& mask, Site site) {
  SiteScope scope(site);
  check_additive(q, k, values, W_q, W_k, v);
  const int64_t B = q.size(0), T = q.size(1), S = k.size(1);
  mask.check(kAdd, B, 1, T, S);
  Tensor qp = linear(q, W_q).unsqueeze(2);   // (B, T, 1, H)
  Tensor kp = linear(k, W_k).unsqueeze(1);   // (B, 1, S, H)
  Tensor scores = matmul(tanh(qp + kp), v);  // (B, T, S)
  if (!mask.is_none()) {
    // built on the host (the mask's tensors may live on either device), used on q's
    const Tensor allowed = mask.on(kCPU).dense_allowed(B, 1, T, S).reshape({B, T, S});
    if (mask.errors_on_fully_masked()) {
      const bool* a = allowed.data<bool>();
      for (int64_t r = 0; r < B * T; ++r) {
        bool any = false;
        for (int64_t j = 0; j < S && !any; ++j) any = a[r * S + j];
        if (!any)
          throw Error(fmt::format("{}: row {} of batch {} has no allowed key (mask: {})", kAdd,
                                  r % T, r / T, mask.name()));
      }
    }
    if (mask.additive_part().defined()) {  // (T, S) .. (B, 1, T, S): finite terms shift scores
      Tensor a = mask.additive_part().to(q.dtype()).to(q.device());
      scores = scores + (a.dim() == 4 ? a.squeeze(1) : a);
    }
    scores = masked_fill(scores, logical_not(allowed.to(q.device())), -kInf);
  }
  Tensor weights = softmax(scores, -1);  // all -inf rows give 0
  return {matmul(weights, values), weights};
}

// ---- scaled dot-product attention as ops ----
std::vector<Tensor> detail::heads_first(const kern::AttentionLayout& d, const Tensor& q,
                                        const Tensor& k, const Tensor& v) {
  using Dims = kern::AttentionLayout;
  auto part = [](const Tensor& t, int64_t i) { return squeeze(narrow(t, 2, i, 1), 2); };
  std::vector<Tensor> r{q, k, v};
  if (d.packing == Dims::kQKV) r = {part(q, 0), part(q, 1), part(q, 2)};
  if (d.packing == Dims::kKV) r = {q, part(k, 0), part(k, 1)};
  if (d.heads_last)
    for (Tensor& t : r) t = transpose(t, 1, 2);
  return r;
}

Tensor detail::composed_additive(const kern::AttentionLayout& d, const AttentionMask& m,
                                 const Tensor& additive, Device dev) {
  if (!m.rel_table().defined() && !m.slopes().defined()) return additive;
  const Tensor db = m.dense_bias(d.NH, d.T, d.S).to(dev);  // (NH or 1, T, S)
  return additive.defined() ? tg::add(additive.to(dev), db) : db;
}

namespace {
// The probe's view of the composed path: S and P now, dP and dS from hooks in the backward.
void probe_composed(const AttentionProbe& p, Tensor scores, Tensor P, const Tensor& allowed) {
  auto probe = std::make_shared<AttentionProbe>(p);
  if (probe->on_forward) probe->on_forward(scores.detach(), P.detach());
  if (!probe->on_backward || !P.requires_grad()) return;
  auto dP = std::make_shared<Tensor>();
  P.register_hook([dP](const Tensor& g) {
    *dP = g;
    return Tensor();
  });
  scores.register_hook([dP, probe, allowed](const Tensor& g) {
    Tensor z = zeros({}, g.dtype(), g.device());
    probe->on_backward(where(allowed, *dP, z), g);
    return Tensor();
  });
}
}  // namespace

AttentionResult detail::composed_sdpa(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionMask& host_mask, const Tensor& additive,
                                      const SDPAOptions& opts, double scale) {
  const int64_t B = q.size(0), NH = q.size(1), T = q.size(2), S = k.size(2);
  const Device dev = q.device();
  Tensor allowed = host_mask.dense_allowed(B, NH, T, S).to(dev);  // (B, NH, T, S) bool
  Tensor scores = mul(matmul(q, transpose(k, -2, -1)), scale);
  if (additive.defined()) scores = add(scores, additive.to(dev));
  scores = masked_fill(scores, logical_not(allowed), -kInf);
  // A row without an allowed key gives P = 0 (softmax of an all -inf row is 0 here, as on the CPU).
  Tensor P = softmax(scores, -1);
  if (opts.probe && (opts.probe->on_forward || opts.probe->on_backward))
    probe_composed(*opts.probe, scores, P, allowed);
  const bool drop = opts.training && opts.dropout_p > 0;
  Tensor Pd = drop ? dropout(P, opts.dropout_p, true) : P;
  AttentionResult res;
  res.output = matmul(Pd, v);
  if (opts.need_weights) res.weights = Pd;
  return res;
}

}  // namespace tg
