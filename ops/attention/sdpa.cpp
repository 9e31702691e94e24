// ops/attention.cpp — scaled_dot_product_attention (and its packed self- and cross-attention
// forms): the plan (each query row's structural key range, kern::key_range over the
// mask's lowering, ops/attention_mask.cpp, shared with CUDA, and the row tiles), the row mask, and
// the tape node; the kernels are cpu::attention_forward / attention_backward
// (ops/cpu/attention.cpp) and, for a CUDA device, ops/attention_cuda.cpp. q, k, v come as (B, NH,
// T, hs), heads last (B, T, NH, hs), packed (B, T, 3, NH, hs), or q heads last with k and v packed
// (B, S, 2, NH, hs) (cpu::AttentionDims). One tape node: an additive mask that requires grad is one
// more input (the backward writes dS densely, (B, NH, T, S), and sums it to the mask's shape, since
// dScores = dMask). The full T×S matrix is stored only when the mask really is full
// (ops/cpu/attention.hpp: MEMORY); without a tape the P tiles are scratch. Deliberately not here:
// the composed forms (attention(), additive attention: attention_composed.cpp), the mask
// description (attention_mask.cpp), the input checks (attention_checks.cpp), modules.
#include "ops/attention/attention.hpp"
#include "ops/attention/internal.hpp"
#include "ops/attention/cpu/fused.hpp"
#include "ops/detail.hpp"
#include "ops/ops.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

namespace tg {
using namespace detail;

namespace {
using Dims = cpu::AttentionDims;
constexpr const char* kSdpa = "scaled_dot_product_attention";
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

cpu::AttentionPlan detail::make_plan(const AttentionMask& m, int64_t T, int64_t S) {
  cpu::AttentionPlan p;
  p.lo.resize(T);
  p.hi.resize(T);
  const MaskLowering l = mask_structure(m, T, S);
  for (int64_t i = 0; i < T; ++i) kern::key_range(l.desc, i, S, p.lo[i], p.hi[i]);
  const int64_t tile = m.has_structure() ? cpu::kAttentionRowTile : cpu::kAttentionRowTileFull;
  for (int64_t r0 = 0; r0 < T; r0 += tile) {
    cpu::AttentionTile t{r0, std::min(T, r0 + tile), S, -1, p.per_bh};
    for (int64_t i = t.r0; i < t.r1; ++i)
      if (p.lo[i] <= p.hi[i]) {
        t.klo = std::min(t.klo, p.lo[i]);
        t.khi = std::max(t.khi, p.hi[i]);
      }
    if (t.khi < t.klo) t.klo = 0, t.khi = -1;  // every row of the tile is structurally empty
    p.per_bh += t.rows() * t.width();
    p.max_tile = std::max(p.max_tile, t.rows() * t.width());
    p.tiles.push_back(t);
  }
  p.first_spans_all = S > 0 && !p.tiles.empty() && p.tiles[0].klo == 0 && p.tiles[0].khi == S - 1;
  return p;
}

LoweredMask detail::lower_mask(const AttentionMask& m, const Dims& d, DType dt) {
  LoweredMask lm;
  cpu::AttentionRowMask& r = lm.rows;
  const MaskLowering l = mask_desc(m, d.B, d.NH, d.T, d.S);
  const kern::MaskDesc& md = l.desc;
  r.key_allowed = md.key_allowed;
  r.lengths = md.key_lengths;
  r.allowed = md.allowed;
  std::copy(md.allowed_stride, md.allowed_stride + 4, r.allowed_st);
  if (md.additive) {  // the kernels read it in float64
    lm.additive64 = m.additive_.detach().to(kFloat64);
    r.additive = lm.additive64.data<double>();
    std::copy(md.additive_stride, md.additive_stride + 4, r.additive_st);
  }
  if (m.rel_table_.defined()) {
    lm.rel64 = m.rel_table_.detach().to(kCPU).to(kFloat64).contiguous();
    r.rel = lm.rel64.data<double>();
    r.rel_n = lm.rel64.size(1);
    r.rel_hs = lm.rel64.size(0) == 1 ? 0 : r.rel_n;
    r.rel_bidirectional = m.rel_bidirectional_;
    r.rel_max_distance = m.rel_max_distance_;
  }
  if (m.alibi_slopes_.defined()) {
    lm.alibi64 = m.alibi_slopes_.detach().to(kCPU).to(kFloat64).contiguous();
    r.alibi = lm.alibi64.data<double>();
  }
  r.shift = m.align_ == CausalAlign::BottomRight ? d.S - d.T : 0;
  if ((r.key_allowed || r.lengths) && !r.allowed && !r.additive && !r.rel && !r.alibi) {
    lm.key_block = Tensor::empty({d.B, d.S}, dt);
    dispatch_float(dt, kSdpa, [&](auto tag) {
      using T = decltype(tag);
      T* kb = lm.key_block.data<T>();
      for (int64_t b = 0; b < d.B; ++b)
        for (int64_t j = 0; j < d.S; ++j) {
          const bool ok =
              (!r.lengths || j < r.lengths[b]) && (!r.key_allowed || r.key_allowed[b * d.S + j]);
          kb[b * d.S + j] = ok ? T(0) : static_cast<T>(-kInf);
        }
    });
    r.key_block = lm.key_block.data_ptr();
  }
  return lm;
}

namespace {

// What the tape node keeps: the kernels' call (P and keep point into the tensors here), the plan,
// the mask (for the probe's dP and dMask), the probe.
struct Ctx {
  cpu::AttentionCall call;
  cpu::AttentionPlan plan;
  Tensor P, keep;
  AttentionMask mask;
  bool mask_grad = false;  // the additive part requires grad: backward also returns dMask
  bool rel_grad = false, alibi_grad = false;  // likewise the position biases
  std::shared_ptr<AttentionProbe> probe;
};

std::vector<Tensor> sdpa_backward(const Ctx& c, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& g) {
  const Dims& d = c.call.d;
  // Packed: q, k and v (or k and v) are one tensor, and so are their gradients (at its offsets).
  const bool qkv = d.packing == Dims::kQKV, kv = d.packing == Dims::kKV;
  Tensor dq = Tensor::empty(q.shape(), q.dtype());
  Tensor dk = qkv ? dq : Tensor::empty(k.shape(), k.dtype());
  Tensor dv = qkv ? dq : kv ? dk : Tensor::empty(v.shape(), v.dtype());
  // dS, the gradient of the scores scale·QKᵀ + mask, dense for the probe and for dMask.
  Tensor dprobs, dscores;
  const bool probe = c.probe && c.probe->on_backward;
  if (probe) dprobs = zeros({d.B, d.NH, d.T, d.S}, q.dtype());
  if (probe || c.mask_grad) dscores = zeros({d.B, d.NH, d.T, d.S}, q.dtype());
  Tensor d_rel, d_alibi;  // per (b, h), float64
  if (c.rel_grad) d_rel = zeros({d.B, d.NH, c.mask.rel_table_.size(1)}, kFloat64);
  if (c.alibi_grad) d_alibi = zeros({d.B, d.NH}, kFloat64);
  const LoweredMask lm = lower_mask(c.mask, d, q.dtype());
  cpu::AttentionCall call = c.call;
  call.mask = &lm.rows;
  call.plan = &c.plan;
  dispatch_float(q.dtype(), kSdpa, [&](auto tag) {
    using T = decltype(tag);
    cpu::AttentionDense<T> dense;
    if (dprobs.defined()) dense.dprobs = dprobs.data<T>();
    if (dscores.defined()) dense.dscores = dscores.data<T>();
    if (d_rel.defined()) dense.d_rel = d_rel.data<double>();
    if (d_alibi.defined()) dense.d_alibi = d_alibi.data<double>();
    cpu::attention_backward<T>(call, dq.data<T>(), dk.data<T>(), dv.data<T>(), g.data<T>(),
                               q.data<T>(), k.data<T>(), v.data<T>(), dense);
  });
  if (dprobs.defined()) c.probe->on_backward(dprobs, dscores);
  std::vector<Tensor> out{dq};
  if (!qkv) out.push_back(dk);
  if (!qkv && !kv) out.push_back(dv);
  if (c.mask_grad) {  // dMask = dS summed over the mask's broadcast dims, in the mask's dtype
    const Tensor& am = c.mask.additive_;
    out.push_back(sum_to(dscores, am.shape()).to(am.dtype()));
  }
  append_bias_grads(out, c.mask, d_rel, d_alibi);
  return out;
}

// create_graph: the node's inputs with their histories, then the row-wise recorded backward
// (O(T·W), ops/attention_grad.cpp), or with a differentiable mask or bias the composed one.
std::vector<Tensor> sdpa_grad_recorded(const Ctx& c, const Tensor& q, const Tensor& k,
                                       const Tensor& v, const Tensor& g) {
  const Dims& d = c.call.d;
  const bool qkv = d.packing == Dims::kQKV, kv = d.packing == Dims::kKV;
  std::vector<Tensor> live;
  live.push_back(saved_input(q, live.size()));
  if (!qkv) live.push_back(saved_input(k, live.size()));
  if (!qkv && !kv) live.push_back(saved_input(v, live.size()));
  if (c.mask_grad) live.push_back(saved_input(c.mask.additive_.detach(), live.size()));
  if (c.rel_grad) live.push_back(saved_input(c.mask.rel_table_.detach(), live.size()));
  if (c.alibi_grad) live.push_back(saved_input(c.mask.alibi_slopes_.detach(), live.size()));
  if (!c.mask_grad && !c.rel_grad && !c.alibi_grad)
    return sdpa_grad_rows(d, live, c.mask, c.call.scale, c.keep, c.call.p, g);
  if (c.call.dropout)
    throw Error(fmt::format(
        "backward of {}: create_graph with dropout and a differentiable mask or position bias "
        "is not supported yet (drop the dropout, or the bias's requires_grad, for second order)",
        kSdpa));
  return detail::sdpa_grad_recorded(d, live, c.mask, c.mask_grad, c.rel_grad, c.alibi_grad,
                                    c.call.scale, g);
}

double default_scale(const SDPAOptions& opts, int64_t hs) {
  return opts.scale ? *opts.scale : (hs > 0 ? 1.0 / std::sqrt(static_cast<double>(hs)) : 1.0);
}

// The fused CPU path, after the checks: q, k, v are the inputs (one tensor three times, or k and v
// one tensor twice, when packed); the tape node differentiates `inputs`.
AttentionResult sdpa_cpu(const Dims& dims, const Tensor& q, const Tensor& k, const Tensor& v,
                         const std::vector<Tensor>& inputs, const AttentionMask& mask,
                         const SDPAOptions& opts) {
  auto c = std::make_shared<Ctx>();
  cpu::AttentionCall& call = c->call;
  call.d = dims;
  const Dims& d = call.d;
  c->plan = make_plan(mask, d.T, d.S);
  call.scale = default_scale(opts, d.hs);
  call.dropout = opts.training && opts.dropout_p > 0;
  call.p = call.dropout ? opts.dropout_p : 0.0;
  call.errors_on_fully_masked = mask.errors_on_fully_masked();
  call.mask_name = mask.name();
  c->mask = mask;
  if (opts.probe) c->probe = std::make_shared<AttentionProbe>(*opts.probe);
  // A differentiable additive mask is one more input of the tape node.
  c->mask_grad = mask.additive_.defined() && mask.additive_.requires_grad() && grad_enabled();
  c->rel_grad = mask.rel_table_.defined() && mask.rel_table_.requires_grad() && grad_enabled();
  c->alibi_grad =
      mask.alibi_slopes_.defined() && mask.alibi_slopes_.requires_grad() && grad_enabled();
  std::vector<Tensor> node_inputs = inputs;
  if (c->mask_grad) node_inputs.push_back(mask.additive_);
  if (c->rel_grad) node_inputs.push_back(mask.rel_table_);
  if (c->alibi_grad) node_inputs.push_back(mask.alibi_slopes_);
  const bool rec = needs_record({&q, &k, &v}) || c->mask_grad || c->rel_grad || c->alibi_grad;
  if (rec) {
    c->P = Tensor::empty({d.B * d.NH * c->plan.per_bh}, q.dtype());
    call.P = c->P.data_ptr();
    if (call.dropout) {
      c->keep = Tensor::empty({d.B * d.NH * c->plan.per_bh}, q.dtype());
      call.keep = c->keep.data_ptr();
    }
  }
  AttentionResult res;
  // every tile writes its rows
  res.output = Tensor::empty(
      d.heads_last ? Shape{d.B, d.T, d.NH, d.hsv} : Shape{d.B, d.NH, d.T, d.hsv}, q.dtype());
  const Shape dense_shape{d.B, d.NH, d.T, d.S};
  if (opts.need_weights) res.weights = zeros(dense_shape, q.dtype());
  Tensor scores, probs;
  if (c->probe && c->probe->on_forward) {
    scores = full(dense_shape, -kInf, q.dtype());
    probs = zeros(dense_shape, q.dtype());
  }
  const LoweredMask lm = lower_mask(mask, d, q.dtype());
  cpu::AttentionCall fwd = call;
  fwd.mask = &lm.rows;
  fwd.plan = &c->plan;
  dispatch_float(q.dtype(), kSdpa, [&](auto tag) {
    using T = decltype(tag);
    cpu::AttentionDense<T> dense;
    if (res.weights.defined()) dense.weights = res.weights.data<T>();
    if (scores.defined()) dense.scores = scores.data<T>(), dense.probs = probs.data<T>();
    cpu::attention_forward<T>(fwd, res.output.data<T>(), q.data<T>(), k.data<T>(), v.data<T>(),
                              dense);
  });
  if (scores.defined()) c->probe->on_forward(scores, probs);
  if (rec) {
    std::shared_ptr<const Ctx> cc = c;
    // Cost model per (query, key) pair the kernel computes (each tile's key range: causal and
    // local masks compute fewer than T·S): forward QKᵀ 2·hs, softmax ~5, P·V 2·hs_v; backward
    // dV and dP 2·hs_v each, softmax ~3, dQ and dK 2·hs each.
    const double pairs = static_cast<double>(d.B) * d.NH * c->plan.per_bh;
    RecordInfo info =
        RecordInfo()
            .flops(pairs * (2.0 * d.hs + 2.0 * d.hsv + 5), pairs * (4.0 * d.hs + 4.0 * d.hsv + 3))
            .rows(3, attention_rows(d));
    if (d.packing == Dims::kQKV)
      info.saved(q, c->P, c->keep);
    else if (d.packing == Dims::kKV)
      info.saved(q, k, c->P, c->keep);
    else
      info.saved(q, k, v, c->P, c->keep);
    // create_graph: the backward as a recorded op (sdpa_grad_recorded below).
    info.differentiable();
    record(kSdpa, res.output, node_inputs, info,
           [cc, qd = q.detach(), kd = k.detach(),
            vd = v.detach()](const Tensor& g) -> std::vector<Tensor> {
             if (creating_graph()) return sdpa_grad_recorded(*cc, qd, kd, vd, g);
             return sdpa_backward(*cc, qd, kd, vd, g);
           });
  }
  return res;
}

}  // namespace

namespace {
// SDPAOptions::is_causal as a mask part (PyTorch's top-left causal).
AttentionMask with_is_causal(const AttentionMask& mask, const SDPAOptions& opts) {
  return opts.is_causal ? mask & AttentionMask::causal() : mask;
}
}  // namespace

// The weights tensor (need_weights) is an output only: it carries no gradient (the tape node
// differentiates `output`). Differentiate through weights with the dense reference if needed.
AttentionResult scaled_dot_product_attention(const Tensor& q_in, const Tensor& k_in,
                                             const Tensor& v_in, const AttentionMask& mask_in,
                                             const SDPAOptions& opts, Site site) {
  SiteScope scope(site);
  const AttentionMask mask = with_is_causal(mask_in, opts);
  const Tensor q = contig(q_in);
  const Tensor k = contig(k_in);
  const Tensor v = contig(v_in);
  const Dims d = check_sdpa(q, k, v, mask, opts);
  if (q.device().is_cuda())
    return cuda_sdpa(d, q, k, v, {q, k, v}, mask, opts, default_scale(opts, d.hs));
  return sdpa_cpu(d, q, k, v, {q, k, v}, mask, opts);
}

AttentionResult scaled_dot_product_attention_packed(const Tensor& qkv_in,
                                                    const AttentionMask& mask_in,
                                                    const SDPAOptions& opts, Site site) {
  SiteScope scope(site);
  const AttentionMask mask = with_is_causal(mask_in, opts);
  const Tensor qkv = contig(qkv_in);
  check_float(qkv, kSdpa, "qkv", true);
  if (qkv.dim() != 5 || qkv.size(2) != 3)
    throw Error(fmt::format("{}: qkv {}: expected (B, T, 3, NH, hs), q, k, v for every position",
                            kSdpa, shape_str(qkv.shape())));
  const int64_t B = qkv.size(0), T = qkv.size(1), NH = qkv.size(3), hs = qkv.size(4);
  if (opts.enable_gqa)
    throw Error(
        fmt::format("{}: qkv {}: packed qkv has one head count; grouped-query attention "
                    "takes q and kv (scaled_dot_product_attention_kv_packed) or q, k, v",
                    kSdpa, shape_str(qkv.shape())));
  SDPAOptions o = opts;
  o.heads_last = true;
  Dims d{B, NH, T, T, hs, hs, true};
  d.packing = Dims::kQKV;
  check_options(d, mask, o, fmt::format("qkv {}", shape_str(qkv.shape())), qkv.device());
  if (qkv.device().is_cuda())
    return cuda_sdpa(d, qkv, qkv, qkv, {qkv}, mask, o, default_scale(o, hs));
  return sdpa_cpu(d, qkv, qkv, qkv, {qkv}, mask, o);
}

AttentionResult scaled_dot_product_attention_kv_packed(const Tensor& q_in, const Tensor& kv_in,
                                                       const AttentionMask& mask_in,
                                                       const SDPAOptions& opts, Site site) {
  SiteScope scope(site);
  const AttentionMask mask = with_is_causal(mask_in, opts);
  const Tensor q = contig(q_in);
  const Tensor kv = contig(kv_in);
  check_float(q, kSdpa, "q", true);
  check_float(kv, kSdpa, "kv", true);
  const std::string shapes =
      fmt::format("q {}, kv {}", shape_str(q.shape()), shape_str(kv.shape()));
  if (q.dim() != 4 || kv.dim() != 5 || kv.size(2) != 2)
    throw Error(
        fmt::format("{}: {}: expected q (B, T, NH, hs) and kv (B, S, 2, NH, hs)", kSdpa, shapes));
  check_same_dtype(q, kv, kSdpa, "q", "kv");
  if (kv.size(0) != q.size(0) || kv.size(4) != q.size(3))
    throw Error(fmt::format("{}: {}: B and hs of q and kv differ", kSdpa, shapes));
  const int64_t nkv = check_heads(q.size(2), kv.size(3), opts, shapes, true);
  if (q.device() != kv.device())
    throw Error(fmt::format("{}: {}: q is on {}, kv on {}; move them to one device", kSdpa, shapes,
                            q.device().str(), kv.device().str()));
  const int64_t B = q.size(0), T = q.size(1), NH = q.size(2), hs = q.size(3), S = kv.size(1);
  SDPAOptions o = opts;
  o.heads_last = true;
  Dims d{B, NH, T, S, hs, hs, true};
  d.packing = Dims::kKV;
  d.NKV = nkv;
  check_options(d, mask, o, shapes, q.device());
  if (q.device().is_cuda()) return cuda_sdpa(d, q, kv, kv, {q, kv}, mask, o, default_scale(o, hs));
  return sdpa_cpu(d, q, kv, kv, {q, kv}, mask, o);
}

}  // namespace tg
