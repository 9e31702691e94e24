// nn/attention.cpp — MultiheadAttention (PyTorch's multi_head_attention_forward, step by step)
// and the seed articles' SeedMultiHeadAttention. Shapes: B batch, T query length, S key length,
// E embed dim, NH heads, hs head size. Internally everything is batch-first (B, T, E).
#include "nn/attention.hpp"

#include "nn/init.hpp"
#include "ops/autocast/autocast.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <cmath>

namespace tg::nn {
namespace {
constexpr const char* kOp = "multihead_attention";

void xavier_normal(Tensor& t) {
  auto [fi, fo] = init::fan_in_and_out(t);
  init::normal_(t, 0.0, std::sqrt(2.0 / static_cast<double>(fi + fo)));
}

// Appends one column to a mask along its last dim: false for bool masks, 0 for float ones.
Tensor pad_key_column(const Tensor& m) {
  if (!m.defined()) return m;
  Shape s = m.shape();
  s.back() = 1;
  return cat({m, zeros(s, m.dtype(), m.device())}, -1);
}

void check_float_input(const Tensor& t, const char* name, DType want) {
  if (!t.defined()) throw Error(fmt::format("{}: {} is undefined", kOp, name));
  // Under autocast the projections (linear) cast the input, as PyTorch's MHA does.
  if (t.dtype() != want && !(is_autocast_enabled() && is_floating(t.dtype())))
    throw Error(
        fmt::format("{}: {} {} is {} but the module's parameters are {}; convert one "
                    "(module.to(dtype) or tensor.to(dtype))",
                    kOp, name, shape_str(t.shape()), dtype_name(t.dtype()), dtype_name(want)));
}
}  // namespace

int64_t resolve_num_kv_heads(const char* module, int64_t kv, int64_t NH) {
  if (kv == -1) return NH;
  if (kv >= 1 && NH % kv == 0) return kv;
  std::string allowed = "-1 (num_heads)";
  if (NH <= 1024)  // the divisors, listed while the list stays short
    for (int64_t d = 1; d <= NH; ++d)
      if (NH % d == 0) allowed += fmt::format(", {}", d);
  throw Error(fmt::format(
      "{}: num_kv_heads {} must be -1 (num_heads) or a positive divisor of num_heads {}: one of "
      "{}",
      module, kv, NH, NH <= 1024 ? allowed : "-1 or a divisor"));
}

MultiheadAttention::MultiheadAttention(int64_t E, int64_t NH, MultiheadAttentionOptions opts)
    : Module("MultiheadAttention"), embed_dim(E), num_heads(NH), options(std::move(opts)) {
  if (E <= 0 || NH <= 0)
    throw Error(
        fmt::format("MultiheadAttention: embed_dim ({}) and num_heads ({}) must be > 0", E, NH));
  if (E % NH != 0)
    throw Error(
        fmt::format("MultiheadAttention: embed_dim {} must be divisible by num_heads {}", E, NH));
  if (options.dropout < 0 || options.dropout >= 1)
    throw Error(
        fmt::format("MultiheadAttention: dropout must be in [0, 1), got {}", options.dropout));
  head_dim = E / NH;
  num_kv_heads = resolve_num_kv_heads("MultiheadAttention", options.num_kv_heads, NH);
  kv_dim = num_kv_heads * head_dim;
  const int64_t KV = kv_dim;
  kdim = options.kdim < 0 ? E : options.kdim;
  vdim = options.vdim < 0 ? E : options.vdim;
  same_embed = kdim == E && vdim == E;
  // PyTorch's registration order, hence its state_dict order.
  if (same_embed) {
    in_proj_weight = zeros({E + 2 * KV, E});
    register_parameter("in_proj_weight", &in_proj_weight);
    init::xavier_uniform_(in_proj_weight);  // over the whole packed (3E, E) matrix, like PyTorch
  } else {
    q_proj_weight = zeros({E, E});
    register_parameter("q_proj_weight", &q_proj_weight);
    k_proj_weight = zeros({KV, kdim});
    register_parameter("k_proj_weight", &k_proj_weight);
    v_proj_weight = zeros({KV, vdim});
    register_parameter("v_proj_weight", &v_proj_weight);
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (options.bias) {
    in_proj_bias = zeros({E + 2 * KV});
    register_parameter("in_proj_bias", &in_proj_bias);
  }
  if (options.add_bias_kv) {
    bias_k = zeros({1, 1, KV});
    register_parameter("bias_k", &bias_k);
    bias_v = zeros({1, 1, KV});
    register_parameter("bias_v", &bias_v);
    xavier_normal(bias_k);
    xavier_normal(bias_v);
  }
  out_proj = register_module("out_proj", std::make_shared<Linear>(E, E, options.bias));
  if (options.bias) init::zeros_(out_proj->bias);
}

std::string MultiheadAttention::extra_repr() const {
  std::string s = fmt::format("embed_dim={}, num_heads={}", embed_dim, num_heads);
  if (!same_embed) s += fmt::format(", kdim={}, vdim={}", kdim, vdim);
  if (num_kv_heads != num_heads) s += fmt::format(", num_kv_heads={}", num_kv_heads);
  if (options.dropout > 0) s += fmt::format(", dropout={}", options.dropout);
  if (options.batch_first) s += ", batch_first=True";
  if (!options.structure.is_none()) s += ", structure=" + options.structure.name();
  return s;
}

std::pair<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                                      const Tensor& value, const Tensor& kpm,
                                                      bool need_weights, const Tensor& attn_mask,
                                                      bool average, bool is_causal, Site site) {
  MHAForwardOptions f;
  f.key_padding_mask = kpm;
  f.need_weights = need_weights;
  f.attn_mask = attn_mask;
  f.average_attn_weights = average;
  f.is_causal = is_causal;
  return forward(query, key, value, f, site);
}

// ---- MultiheadAttention::forward, step by step ----
namespace {
// forward's operands batch first and its masks checked: q (B, T, E), k (B, S, kdim),
// v (B, S, vdim); key padding kp (B, S), attn_mask am (T, S) or (B, NH, T, S) (each undefined
// when not given).
struct MHAInputs {
  Tensor q, k, v, kp, am;
  int64_t B = 0, T = 0, S = 0;
  bool batched = true;
};
// The projections, heads last: packed qkv (B, T, 3, NH, hs); or q (B, T, NH, hs) with packed kv
// (B, S, 2, NKV, hs) (kh, vh its halves, the cache's when there is one); or q, k, v (B, T|S,
// NH|NKV, hs).
struct MHAHeads {
  Tensor qkv, qh, kh, vh, kv;
  bool packed = false, kv_packed = false;
};

const char* mha_layout(const MultiheadAttention& m) {
  return m.options.batch_first ? "(B, T, E) with batch_first=true"
                               : "(T, B, E) with batch_first=false";
}

void check_mha_inputs(const MultiheadAttention& m, const Tensor& query, const Tensor& key,
                      const Tensor& value) {
  const DType dt = m.out_proj->weight.dtype();
  check_float_input(query, "query", dt);
  check_float_input(key, "key", dt);
  check_float_input(value, "value", dt);
  if ((query.dim() != 3 && query.dim() != 2) || query.size(-1) != m.embed_dim)
    throw Error(fmt::format("{}: query must be {} or unbatched (T, E) with E = {}, got {}", kOp,
                            mha_layout(m), m.embed_dim, shape_str(query.shape())));
  if (key.dim() != query.dim() || value.dim() != query.dim())
    throw Error(fmt::format(
        "{}: query {}, key {} and value {} must all be batched (3-D) or all "
        "unbatched (2-D)",
        kOp, shape_str(query.shape()), shape_str(key.shape()), shape_str(value.shape())));
  if (key.size(-1) != m.kdim || value.size(-1) != m.vdim)
    throw Error(fmt::format("{}: key {} must end in kdim = {} and value {} in vdim = {}", kOp,
                            shape_str(key.shape()), m.kdim, shape_str(value.shape()), m.vdim));
}

// Masks in batch-first form: key padding (B, S), attn_mask (T, S) or (B, NH, T, S).
void check_mha_masks(const MultiheadAttention& m, const MHAForwardOptions& f, MHAInputs& in) {
  const DType dt = m.out_proj->weight.dtype();
  const int64_t B = in.B, T = in.T, S = in.S, NH = m.num_heads;
  Tensor& kp = in.kp = f.key_padding_mask;
  if (kp.defined()) {
    if (!in.batched && kp.dim() == 1) kp = unsqueeze(kp, 0);
    if (kp.shape() != Shape{B, S})
      throw Error(fmt::format("{}: key_padding_mask {} must be (B, S) = ({}, {}){}", kOp,
                              shape_str(f.key_padding_mask.shape()), B, S,
                              in.batched ? "" : " or (S) for unbatched input"));
    if (kp.dtype() != kBool && kp.dtype() != dt)
      throw Error(
          fmt::format("{}: key_padding_mask {} must be bool (True = padding) or {} (added), got {}",
                      kOp, shape_str(kp.shape()), dtype_name(dt), dtype_name(kp.dtype())));
  }
  Tensor& am = in.am = f.attn_mask;
  if (!am.defined()) return;
  const int64_t lead = in.batched ? B * NH : NH;
  if (am.dim() == 3 && am.shape() == Shape{lead, T, S})
    am = reshape(am, {B, NH, T, S});
  else if (!(am.dim() == 2 && am.shape() == Shape{T, S}))
    throw Error(
        fmt::format("{}: attn_mask {} must be (T, S) = ({}, {}) or ({}, T, S) = ({}, {}, {})", kOp,
                    shape_str(am.shape()), T, S, in.batched ? "B·NH" : "NH", lead, T, S));
  if (am.dtype() != kBool && am.dtype() != dt)
    throw Error(
        fmt::format("{}: attn_mask {} must be bool (True = not allowed) or {} (added), got {}", kOp,
                    shape_str(f.attn_mask.shape()), dtype_name(dt), dtype_name(am.dtype())));
}

MHAInputs batch_first(const MultiheadAttention& m, const Tensor& query, const Tensor& key,
                      const Tensor& value, const MHAForwardOptions& f) {
  MHAInputs in;
  in.batched = query.dim() == 3;
  const bool bf = m.options.batch_first;
  auto to_bf = [&](const Tensor& x) {
    if (!in.batched) return unsqueeze(x, 0);
    return bf ? x : transpose(x, 0, 1);
  };
  in.q = to_bf(query);  // one tensor given twice is converted once
  in.k = key.impl() == query.impl() ? in.q : to_bf(key);
  in.v = value.impl() == key.impl() ? in.k : to_bf(value);
  in.B = in.q.size(0), in.T = in.q.size(1), in.S = in.k.size(1);
  if (in.k.size(0) != in.B || in.v.size(0) != in.B || in.v.size(1) != in.S)
    throw Error(fmt::format("{}: query {}, key {} and value {} disagree on B or S (layout {})", kOp,
                            shape_str(query.shape()), shape_str(key.shape()),
                            shape_str(value.shape()),
                            in.batched ? mha_layout(m) : "unbatched (T, E)"));
  check_mha_masks(m, f, in);
  return in;
}

// In-projections with their own weights or row blocks of in_proj_weight: (B, T|S, NH|NKV, hs)
// views of the projections (no head-split copy; scaled_dot_product_attention reads them in place),
// with add_bias_kv's and add_zero_attn's extra key/value positions (the masks padded to match).
MHAHeads project_separate(const MultiheadAttention& m, MHAInputs& in) {
  const int64_t E = m.embed_dim, NH = m.num_heads, hs = m.head_dim, NKV = m.num_kv_heads;
  const int64_t KV = m.kv_dim, B = in.B;
  Tensor Wq = m.q_proj_weight, Wk = m.k_proj_weight, Wv = m.v_proj_weight, bq, bk, bv;
  if (m.same_embed) {
    Wq = narrow(m.in_proj_weight, 0, 0, E);
    Wk = narrow(m.in_proj_weight, 0, E, KV);
    Wv = narrow(m.in_proj_weight, 0, E + KV, KV);
  }
  if (m.in_proj_bias.defined()) {
    bq = narrow(m.in_proj_bias, 0, 0, E);
    bk = narrow(m.in_proj_bias, 0, E, KV);
    bv = narrow(m.in_proj_bias, 0, E + KV, KV);
  }
  Tensor qp = linear(in.q, Wq, bq), kp = linear(in.k, Wk, bk), vp = linear(in.v, Wv, bv);
  if (m.options.add_bias_kv) {  // one more key/value position, allowed by every mask
    kp = cat({kp, expand(m.bias_k, {B, 1, KV})}, 1);
    vp = cat({vp, expand(m.bias_v, {B, 1, KV})}, 1);
    in.kp = pad_key_column(in.kp);
    in.am = pad_key_column(in.am);
    ++in.S;
  }
  MHAHeads h;
  h.qh = reshape(qp, {B, in.T, NH, hs});
  h.kh = reshape(kp, {B, in.S, NKV, hs});
  h.vh = reshape(vp, {B, in.S, NKV, hs});
  if (m.options.add_zero_attn) {  // a zero key/value position after the projections
    const DType dt = m.out_proj->weight.dtype();
    h.kh = cat({h.kh, zeros({B, 1, NKV, hs}, dt, h.kh.device())}, 1);
    h.vh = cat({h.vh, zeros({B, 1, NKV, hs}, dt, h.vh.device())}, 1);
    in.kp = pad_key_column(in.kp);
    in.am = pad_key_column(in.am);
    ++in.S;
  }
  return h;
}

// Self-attention (one tensor as query, key and value) with the packed in_proj_weight: one
// (B, T, 3E) projection, one GEMM, read in place by the packed attention (PyTorch packs too).
// Cross-attention with key = value, and grouped-query self-attention: one (B, S, 2·kv_dim)
// projection by the last two row blocks of in_proj_weight (a view), read in place as packed
// keys and values (PyTorch packs too); with a KV cache, every cached position's keys and values.
MHAHeads project(MultiheadAttention& m, const Tensor& query, const Tensor& key, const Tensor& value,
                 const MHAForwardOptions& f, MHAInputs& in) {
  const int64_t E = m.embed_dim, NH = m.num_heads, hs = m.head_dim, NKV = m.num_kv_heads;
  const int64_t KV = m.kv_dim, B = in.B, T = in.T;
  const bool plain = m.same_embed && !m.options.add_bias_kv && !m.options.add_zero_attn;
  const bool self = query.impl() == key.impl() && key.impl() == value.impl();
  if (f.kv_cache && !(plain && self && !in.kp.defined() && !in.am.defined()))
    throw Error(fmt::format(
        "{}: kv_cache needs self-attention (query, key and value one tensor, here {}) with the "
        "packed in_proj_weight, no add_bias_kv / add_zero_attn and no attn_mask or "
        "key_padding_mask (the structure mask applies)",
        kOp, self ? "one" : "not one"));
  MHAHeads h;
  h.packed = plain && NKV == NH && self && !f.kv_cache;
  h.kv_packed = plain && !h.packed && key.impl() == value.impl();
  if (h.packed) {
    h.qkv = reshape(linear(in.q, m.in_proj_weight, m.in_proj_bias), {B, T, 3, NH, hs});
    return h;
  }
  if (!h.kv_packed) return project_separate(m, in);
  const Tensor& W = m.in_proj_weight;
  const Tensor bq = m.in_proj_bias.defined() ? narrow(m.in_proj_bias, 0, 0, E) : Tensor();
  const Tensor bkv = m.in_proj_bias.defined() ? narrow(m.in_proj_bias, 0, E, 2 * KV) : Tensor();
  h.qh = reshape(linear(in.q, narrow(W, 0, 0, E), bq), {B, T, NH, hs});
  h.kv = reshape(linear(in.k, narrow(W, 0, E, 2 * KV), bkv), {B, in.S, 2, NKV, hs});
  if (f.kv_cache) {  // every cached position's keys and values, heads last
    const AttentionMask& st = m.options.structure;
    std::tie(h.kh, h.vh) = f.kv_cache->append(select(h.kv, 2, 0), select(h.kv, 2, 1), m,
                                              f.is_causal ? st & AttentionMask::causal() : st);
    in.S = h.kh.size(1);
  }
  return h;
}

// The structure, the key padding and the attn_mask as one AttentionMask.
AttentionMask mha_mask(const MultiheadAttention& m, const MHAInputs& in,
                       const MHAForwardOptions& f) {
  AttentionMask mask = m.options.structure;
  const Tensor &kp = in.kp, &am = in.am;
  if (kp.defined())
    mask = mask & (kp.dtype() == kBool ? AttentionMask::key_padding(kp, MaskPolarity::TrueBlocked)
                                       : AttentionMask::additive(reshape(kp, {in.B, 1, 1, in.S})));
  if (am.defined())
    mask = mask & (am.dtype() == kBool ? AttentionMask::from_bool(am, MaskPolarity::TrueBlocked)
                                       : AttentionMask::additive(am));
  if (f.is_causal && !am.defined()) mask = mask & AttentionMask::causal();
  if (f.kv_cache) mask = mask.aligned(CausalAlign::BottomRight);  // the queries: the last T
  return mask;
}
}  // namespace

std::pair<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                                      const Tensor& value,
                                                      const MHAForwardOptions& f, Site site) {
  SiteScope scope(site);
  check_mha_inputs(*this, query, key, value);
  MHAInputs in = batch_first(*this, query, key, value, f);
  const MHAHeads h = project(*this, query, key, value, f, in);
  const AttentionMask mask = mha_mask(*this, in, f);
  SDPAOptions so;
  so.dropout_p = options.dropout;
  so.training = is_training();
  so.need_weights = f.need_weights;
  so.heads_last = true;
  so.enable_gqa = num_kv_heads != num_heads;
  AttentionResult r = h.packed ? scaled_dot_product_attention_packed(h.qkv, mask, so)
                      : h.kv_packed && !f.kv_cache
                          ? scaled_dot_product_attention_kv_packed(h.qh, h.kv, mask, so)
                          : scaled_dot_product_attention(h.qh, h.kh, h.vh, mask, so);

  // Merge heads (a view: the output is (B, T, NH, hs)) and project: (B, T, E).
  Tensor out = out_proj->forward(reshape(r.output, {in.B, in.T, embed_dim}));
  Tensor w = r.weights;
  if (w.defined() && f.average_attn_weights) w = mean(w, {1});  // (B, T, S)
  if (!in.batched) {
    out = squeeze(out, 0);
    if (w.defined()) w = squeeze(w, 0);
  } else if (!options.batch_first) {
    out = transpose(out, 0, 1);
  }
  return {hooked({query, key, value}, out), w};
}

// ---- T5's relative-position bias ----
RelativePositionBias::RelativePositionBias(int64_t NH, int64_t buckets, int64_t maxd, bool bidir)
    : Module("RelativePositionBias"),
      num_heads(NH),
      num_buckets(buckets),
      max_distance(maxd),
      bidirectional(bidir) {
  if (NH < 1 || buckets < 2 || maxd < 2)
    throw Error(
        fmt::format("RelativePositionBias: num_heads {} must be >= 1, num_buckets {} and "
                    "max_distance {} >= 2",
                    NH, buckets, maxd));
  weight = zeros({buckets, NH});
  register_parameter("weight", &weight);
  init::normal_(weight);
}
AttentionMask RelativePositionBias::mask() const {
  return AttentionMask::relative_bias(transpose(weight, 0, 1), bidirectional, max_distance);
}
std::string RelativePositionBias::extra_repr() const {
  return fmt::format("num_heads={}, num_buckets={}, max_distance={}, bidirectional={}", num_heads,
                     num_buckets, max_distance, bidirectional ? "True" : "False");
}

// ---- the seed's layout ----
SeedMultiHeadAttention::SeedMultiHeadAttention(int64_t d, int64_t h, AttentionMask s)
    : Module("SeedMultiHeadAttention"), d_model(d), n_heads(h), structure(std::move(s)) {
  if (d <= 0 || h <= 0 || d % h != 0)
    throw Error(fmt::format(
        "SeedMultiHeadAttention: d_model {} must be a positive multiple of n_heads {}", d, h));
  d_k = d / h;
  W_q = register_module("W_q", std::make_shared<Linear>(d, d));
  W_k = register_module("W_k", std::make_shared<Linear>(d, d));
  W_v = register_module("W_v", std::make_shared<Linear>(d, d));
  W_o = register_module("W_o", std::make_shared<Linear>(d, d));
}

std::string SeedMultiHeadAttention::extra_repr() const {
  return fmt::format("d_model={}, n_heads={}", d_model, n_heads);
}

std::pair<Tensor, Tensor> SeedMultiHeadAttention::forward(const Tensor& Q, const Tensor& K,
                                                          const Tensor& V, const Tensor& mask) {
  for (const Tensor* t : {&Q, &K, &V})
    if (!t->defined() || t->dim() != 3 || t->size(-1) != d_model)
      throw Error(fmt::format("SeedMultiHeadAttention: Q, K, V must be (B, T, {}), got {}", d_model,
                              t->defined() ? shape_str(t->shape()) : "undefined"));
  // Heads last, as views of the projections: (B, T, h, d_k), (B, S, h, d_k).
  auto heads = [&](const Tensor& x) { return reshape(x, {x.size(0), x.size(1), n_heads, d_k}); };
  Tensor q = heads(W_q->forward(Q)), k = heads(W_k->forward(K)), v = heads(W_v->forward(V));
  AttentionMask m = structure;
  if (mask.defined()) m = m & AttentionMask::from_seed(mask);
  SDPAOptions so;
  so.need_weights = true;
  so.heads_last = true;
  AttentionResult r = scaled_dot_product_attention(q, k, v, m, so);
  Tensor out = W_o->forward(reshape(r.output, {Q.size(0), Q.size(1), d_model}));
  return {hooked({Q, K, V}, out), r.weights};
}

}  // namespace tg::nn
