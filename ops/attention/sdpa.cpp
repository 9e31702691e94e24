// ops/attention/sdpa.cpp — scaled_dot_product_attention and its packed self- and cross-attention
// forms: each public form checks its own operands (checks.cpp) and hands them to the one internal
// sdpa(), which checks what the forms share, resolves the call once (scale, dropout, which mask
// tensors are differentiable), picks the device once, and records the one tape node; and the CPU
// half: the fused kernels cpu::attention_forward / attention_backward (ops/attention/cpu/fused.cpp)
// over the mask's lowering (lowering.cpp: each row's structural key range, the row tiles, the row
// mask). q, k, v come as (B, NH, T, hs), heads last (B, T, NH, hs), packed (B, T, 3, NH, hs), or q
// heads last with k and v packed (B, S, 2, NH, hs) (cpu::AttentionDims). An additive mask that
// requires grad is one more input of the node (the backward writes dS densely, (B, NH, T, S), and
// sums it to the mask's shape, since dScores = dMask). The full T×S matrix is stored only when the
// mask really is full (ops/attention/cpu/fused.hpp: MEMORY); without a tape the P tiles are
// scratch. Deliberately not here: the CUDA half (cuda.cpp), create_graph (create_graph.cpp), the
// composed forms (composed.cpp), the mask (mask.cpp), modules.
#include "ops/autocast/autocast.hpp"
#include "ops/attention/attention.hpp"
#include "ops/attention/cpu/bf16.hpp"
#include "ops/attention/cpu/fused.hpp"
#include "ops/attention/internal.hpp"
#include "ops/core/detail.hpp"
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

// ---- the CPU half ----
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

std::vector<Tensor> cpu_backward(const Ctx& c, const Tensor& q, const Tensor& k, const Tensor& v,
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
  if (c.rel_grad) d_rel = zeros({d.B, d.NH, c.mask.rel_table().size(1)}, kFloat64);
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
    const Tensor& am = c.mask.additive_part();
    out.push_back(sum_to(dscores, am.shape()).to(am.dtype()));
  }
  append_bias_grads(out, c.mask, d_rel, d_alibi);
  return out;
}

// The kernels' call for sdpa's call s: the plan, and the P (and keep) tiles when recording.
std::shared_ptr<Ctx> cpu_ctx(const SdpaCall& s, DType dt) {
  auto c = std::make_shared<Ctx>();
  cpu::AttentionCall& call = c->call;
  call.d = s.d;
  const Dims& d = call.d;
  c->plan = make_plan(s.mask, d.T, d.S);
  call.scale = s.scale;
  call.dropout = s.dropout;
  call.p = s.dropout ? s.opts.dropout_p : 0.0;
  call.errors_on_fully_masked = s.mask.errors_on_fully_masked();
  int64_t keys = 0;  // the widest row tile's keys: the dot products pay from a width on
  for (const cpu::AttentionTile& t : c->plan.tiles) keys = std::max(keys, t.width());
  call.bf16_products = s.bf16 && cpu::attention_bf16_dot(keys);
  call.mask_name = s.mask.name();
  c->mask = s.mask;
  if (s.opts.probe) c->probe = std::make_shared<AttentionProbe>(*s.opts.probe);
  c->mask_grad = s.mask_grad, c->rel_grad = s.rel_grad, c->alibi_grad = s.alibi_grad;
  if (s.record) {
    c->P = Tensor::empty({d.B * d.NH * c->plan.per_bh}, dt);
    call.P = c->P.data_ptr();
    if (call.dropout) {
      c->keep = Tensor::empty({d.B * d.NH * c->plan.per_bh}, dt);
      call.keep = c->keep.data_ptr();
    }
  }
  return c;
}

}  // namespace

namespace {
// bfloat16 / float16 operands: the float32 kernels on float32 copies of q, k and v (the softmax
// and every product accumulate in float32), the output and each operand's gradient rounded once
// to the operands' dtype. The mask's gradients keep their own dtypes. Packed operands stay one
// tensor. On a GPU the casts are recorded: its composed path (need_weights, dropout, head sizes
// above the fused kernels') records its own ops on the float32 copies, which the casts join to q,
// k and v (each gradient still rounded once, by the cast's backward).
SdpaForward reduced_sdpa(const SdpaCall& s, const Tensor& q, const Tensor& k, const Tensor& v) {
  const DType rt = q.dtype();
  const bool gpu = q.device().is_cuda();
  auto up = [gpu](const Tensor& t) { return gpu ? t.to(kFloat32) : t.detach().to(kFloat32); };
  const Tensor qf = up(q);
  const Tensor kf = k.same(q) ? qf : up(k);
  const Tensor vf = v.same(q) ? qf : v.same(k) ? kf : up(v);
  SdpaCall w = s;
  w.widened = true;
  w.bf16 = rt == kBFloat16;
  SdpaForward f = gpu ? detail::cuda_sdpa(w, qf, kf, vf) : detail::cpu_sdpa(w, qf, kf, vf);
  f.res.output = f.res.output.to(rt);
  if (f.res.weights.defined()) f.res.weights = f.res.weights.to(rt);
  if (f.backward) {
    const size_t operands = s.d.packing == Dims::kQKV ? 1 : s.d.packing == Dims::kKV ? 2 : 3;
    f.backward = [backward = std::move(f.backward), rt, operands](const Tensor& g) {
      std::vector<Tensor> grads = backward(g.detach().to(kFloat32));
      for (size_t i = 0; i < operands && i < grads.size(); ++i) grads[i] = grads[i].to(rt);
      return grads;
    };
  }
  return f;
}
}  // namespace

// The fused CPU path: q, k, v are the operands (one tensor three times, or k and v one tensor
// twice, when packed).
SdpaForward detail::cpu_sdpa(const SdpaCall& s, const Tensor& q, const Tensor& k, const Tensor& v) {
  if (is_reduced(q.dtype())) return reduced_sdpa(s, q, k, v);
  const std::shared_ptr<Ctx> c = cpu_ctx(s, q.dtype());
  const Dims& d = c->call.d;
  SdpaForward f;
  AttentionResult& res = f.res;
  // every tile writes its rows
  res.output = Tensor::empty(
      d.heads_last ? Shape{d.B, d.T, d.NH, d.hsv} : Shape{d.B, d.NH, d.T, d.hsv}, q.dtype());
  const Shape dense_shape{d.B, d.NH, d.T, d.S};
  if (s.opts.need_weights) res.weights = zeros(dense_shape, q.dtype());
  Tensor scores, probs;
  if (c->probe && c->probe->on_forward) {
    scores = full(dense_shape, -kInf, q.dtype());
    probs = zeros(dense_shape, q.dtype());
  }
  const LoweredMask lm = lower_mask(s.mask, d, q.dtype());
  cpu::AttentionCall fwd = c->call;
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
  if (!s.record) return f;
  // Cost model per (query, key) pair the kernel computes (each tile's key range: causal and
  // local masks compute fewer than T·S): forward QKᵀ 2·hs, softmax ~5, P·V 2·hs_v; backward
  // dV and dP 2·hs_v each, softmax ~3, dQ and dK 2·hs each.
  const double pairs = static_cast<double>(d.B) * d.NH * c->plan.per_bh;
  f.info.flops(pairs * (2.0 * d.hs + 2.0 * d.hsv + 5), pairs * (4.0 * d.hs + 4.0 * d.hsv + 3));
  f.info.save(c->P);  // intermediates the context holds: their bytes and versions (q, k, v: sdpa())
  f.info.save(c->keep);
  f.keep = c->keep;
  std::shared_ptr<const Ctx> cc = c;
  f.backward = [cc, qd = q.detach(), kd = k.detach(), vd = v.detach()](const Tensor& g) {
    return cpu_backward(*cc, qd, kd, vd, g);
  };
  return f;
}

// ---- the one entry: checks, the call resolved once, the device picked once, the tape node ----
namespace {

SdpaCall resolve(const SdpaChecked& ch, const AttentionMask& mask_in, const SDPAOptions& opts,
                 const Tensor& q, const Tensor& k, const Tensor& v) {
  SdpaCall c;
  c.d = ch.d;
  // SDPAOptions::is_causal as a mask part (PyTorch's top-left causal).
  c.mask = opts.is_causal ? mask_in & AttentionMask::causal() : mask_in;
  c.opts = opts;
  c.scale = opts.scale ? *opts.scale : (c.d.hs > 0 ? 1.0 / std::sqrt(double(c.d.hs)) : 1.0);
  c.dropout = opts.training && opts.dropout_p > 0;
  auto grad = [](const Tensor& t) { return t.defined() && t.requires_grad() && grad_enabled(); };
  c.mask_grad = grad(c.mask.additive_part());
  c.rel_grad = grad(c.mask.rel_table());
  c.alibi_grad = grad(c.mask.slopes());
  c.record = needs_record({&q, &k, &v}) || c.mask_grad || c.rel_grad || c.alibi_grad;
  return c;
}

// q, k, v contiguous operands in the layout ch.d describes; `inputs` the tensors the tape node
// differentiates ({q, k, v}, {qkv} or {q, kv}). The weights tensor (need_weights) is an output
// only: it carries no gradient (the node differentiates `output`).
AttentionResult sdpa(const SdpaChecked& ch, const Tensor& q, const Tensor& k, const Tensor& v,
                     const std::vector<Tensor>& inputs, const AttentionMask& mask_in,
                     const SDPAOptions& opts) {
  auto c = std::make_shared<const SdpaCall>(resolve(ch, mask_in, opts, q, k, v));
  check_options(c->d, q, k, v, c->mask, opts, ch.shapes);
  SdpaForward f = is_reduced(q.dtype())  ? reduced_sdpa(*c, q, k, v)
                  : q.device().is_cuda() ? cuda_sdpa(*c, q, k, v)
                                         : cpu_sdpa(*c, q, k, v);
  if (!f.backward) return f.res;
  std::vector<Tensor> node_inputs = inputs;  // then the mask's differentiable tensors
  if (c->mask_grad) node_inputs.push_back(c->mask.additive_part());
  if (c->rel_grad) node_inputs.push_back(c->mask.rel_table());
  if (c->alibi_grad) node_inputs.push_back(c->mask.slopes());
  // create_graph: the backward as recorded ops (create_graph.cpp).
  // The operands the backward reads, one handle each (packed k and v are views of q's input).
  const bool qkv = c->d.packing == Dims::kQKV, kv = c->d.packing == Dims::kKV;
  const Saved sq = f.info.save(q), sk = qkv ? Saved() : f.info.save(k),
              sv = qkv || kv ? Saved() : f.info.save(v);
  record(kSdpa, f.res.output, node_inputs, f.info.rows(3, attention_rows(c->d)).differentiable(),
         [c, backward = std::move(f.backward), keep = f.keep, sq, sk,
          sv](const Tensor& g) -> std::vector<Tensor> {
           if (creating_graph())
             return sdpa_create_graph(*c, sq.get(), sk.get(), sv.get(), keep, g);
           return backward(g);
         });
  return f.res;
}

}  // namespace

AttentionResult scaled_dot_product_attention(const Tensor& q_in, const Tensor& k_in,
                                             const Tensor& v_in, const AttentionMask& mask,
                                             const SDPAOptions& opts, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("scaled_dot_product_attention", {&q_in, &k_in, &v_in}))
    return scaled_dot_product_attention((*c)[0], (*c)[1], (*c)[2], mask, opts, site);
  const Tensor q = contig(q_in), k = contig(k_in), v = contig(v_in);
  return sdpa(check_sdpa(q, k, v, opts), q, k, v, {q, k, v}, mask, opts);
}

AttentionResult scaled_dot_product_attention_packed(const Tensor& qkv_in, const AttentionMask& mask,
                                                    const SDPAOptions& opts, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("scaled_dot_product_attention_packed", {&qkv_in}))
    return scaled_dot_product_attention_packed((*c)[0], mask, opts, site);
  const Tensor qkv = contig(qkv_in);
  const SdpaChecked ch = check_packed(qkv, opts);
  SDPAOptions o = opts;
  o.heads_last = true;
  return sdpa(ch, qkv, qkv, qkv, {qkv}, mask, o);
}

AttentionResult scaled_dot_product_attention_kv_packed(const Tensor& q_in, const Tensor& kv_in,
                                                       const AttentionMask& mask,
                                                       const SDPAOptions& opts, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("scaled_dot_product_attention_kv_packed", {&q_in, &kv_in}))
    return scaled_dot_product_attention_kv_packed((*c)[0], (*c)[1], mask, opts, site);
  const Tensor q = contig(q_in), kv = contig(kv_in);
  const SdpaChecked ch = check_kv_packed(q, kv, opts);
  SDPAOptions o = opts;
  o.heads_last = true;
  return sdpa(ch, q, kv, kv, {q, kv}, mask, o);
}

}  // namespace tg
