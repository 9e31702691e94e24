// ops/attention/create_graph.cpp — every create_graph piece of scaled_dot_product_attention, both
// devices, under one name: sdpa_create_graph, the tape node's backward while a graph is created.
// Two ways, one result:
//   rows (the CPU without a differentiable mask or bias): no dense T×S matrix. The first-order
//     backward becomes an op, scaled_dot_product_attention_backward, over q, k, v, dO in the
//     canonical layout (B, NH, T|S, hs), computed by cpu::attention_grad_rows (P recomputed row by
//     row) and differentiated by cpu::attention_grad2_rows (ops/attention/cpu/grad2.cpp has the
//     formulas; docs/backprop-through-attention.md derives them). One node with one output: dq,
//     dk, dv packed flat, viewed apart by recorded ops. The node's own backward is raw: a third
//     derivative through it is refused by the engine.
//   composed (CUDA, and differentiable masks and biases): composed_sdpa's ops (composed.cpp),
//     differentiated by the tape, O(T·S).
// Heads last, packed operands and grouped heads reach the canonical layout by recorded views, and
// the gradients go back through them by a walk that stops at the node's inputs (slots).
// Deliberately not here: the first-order paths (sdpa.cpp, cuda.cpp).
#include "autograd/grad_detail.hpp"
#include "ops/attention/internal.hpp"
#include "ops/core/detail.hpp"
#include "ops/ops.hpp"

#include <memory>

namespace tg::detail {

namespace {
using Dims = kern::AttentionLayout;
constexpr const char* kOp = "scaled_dot_product_attention_backward";

// The kernels' call over the canonical layout; call.plan and call.mask point into this struct.
struct RowsCtx {
  AttentionMask mask;  // its tensors: what lm.rows points into
  Tensor keep;         // dropout: the forward's keep tiles
  cpu::AttentionPlan plan;
  LoweredMask lm;
  cpu::AttentionCall call;
};

// [dq | dk | dv] flat, of q4, k4, v4 for dO g4 (canonical, contiguous).
Tensor backward_op(const std::shared_ptr<const RowsCtx>& c, const Tensor& q4, const Tensor& k4,
                   const Tensor& v4, const Tensor& g4) {
  const int64_t nq = q4.numel(), nk = k4.numel(), nv = v4.numel();
  Tensor out = Tensor::empty({nq + nk + nv}, q4.dtype());
  dispatch_float(q4.dtype(), kOp, [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    cpu::attention_grad_rows<T>(c->call, q4.data<T>(), k4.data<T>(), v4.data<T>(), g4.data<T>(), o,
                                o + nq, o + nq + nk);
  });
  if (!needs_record({&q4, &k4, &v4, &g4})) return out;
  const Dims& d = c->call.d;
  const double pairs = static_cast<double>(d.B) * d.NH * c->plan.per_bh;
  RecordInfo info;
  info.flops(pairs * (4.0 * d.hs + 4.0 * d.hsv), pairs * (8.0 * d.hs + 10.0 * d.hsv));
  const Saved sq = info.save(q4), sk = info.save(k4), sv = info.save(v4), sg = info.save(g4);
  record(kOp, out, {q4, k4, v4, g4}, info,
         [c, sq, sk, sv, sg, nq, nk](const Tensor& gg_in) -> std::vector<Tensor> {
           const Tensor gg = gg_in.contiguous();
           const Tensor qd = sq.get(), kd = sk.get(), vd = sv.get(), gd = sg.get();
           Tensor q2 = Tensor::empty(qd.shape(), qd.dtype()),
                  k2 = Tensor::empty(kd.shape(), kd.dtype());
           Tensor v2 = Tensor::empty(vd.shape(), vd.dtype()),
                  o2 = Tensor::empty(gd.shape(), gd.dtype());
           dispatch_float(qd.dtype(), kOp, [&](auto tag) {
             using T = decltype(tag);
             const T* g = gg.data<T>();
             cpu::attention_grad2_rows<T>(c->call, qd.data<T>(), kd.data<T>(), vd.data<T>(),
                                          gd.data<T>(), g, g + nq, g + nq + nk, q2.data<T>(),
                                          k2.data<T>(), v2.data<T>(), o2.data<T>());
           });
           return {q2, k2, v2, o2};
         });
  return out;
}

// A distinct node over each input that requires grad (identity backward): one capture point per
// slot, also when one tensor is passed as q, k and v.
std::vector<Tensor> attention_slots(const std::vector<Tensor>& live) {
  std::vector<Tensor> slots;
  for (const Tensor& t : live) {
    if (!t.defined() || !t.requires_grad()) {
      slots.push_back(t);
      continue;
    }
    Tensor out = make_view(t, t.shape(), t.strides(), t.impl()->offset);
    record("alias", out, {t}, RecordInfo().flops(0, 0).saves_nothing().differentiable(),
           [](const Tensor& g) -> std::vector<Tensor> { return {g}; });
    slots.push_back(out);
  }
  return slots;
}

// Grads from roots back to the slots (grad_stop_at_inputs, recorded): one gradient per slot,
// zeros where none arrives, undefined for a slot that needs none.
std::vector<Tensor> slot_grads(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
                               const std::vector<Tensor>& slots) {
  std::vector<Tensor> rs, gs, wrt;
  for (size_t i = 0; i < roots.size(); ++i)
    if (roots[i].requires_grad()) rs.push_back(roots[i]), gs.push_back(grads[i]);
  for (const Tensor& t : slots)
    if (t.requires_grad()) wrt.push_back(t);
  std::vector<Tensor> got;
  if (!rs.empty() && !wrt.empty()) got = grad_stop_at_inputs(rs, wrt, gs, true);
  std::vector<Tensor> res;
  for (size_t j = 0, w = 0; j < slots.size(); ++j) {
    if (!slots[j].requires_grad()) {
      res.push_back(Tensor());
      continue;
    }
    const Tensor r = got.empty() ? Tensor() : got[w++];
    res.push_back(r.defined() ? r : zeros_like(slots[j]));
  }
  return res;
}

// (B, NH, T|S, hs) views of the slots' q, k, v, grouped heads repeated.
std::vector<Tensor> canonical(const Dims& d, const std::vector<Tensor>& slots) {
  const bool qkv = d.packing == Dims::kQKV, kv = d.packing == Dims::kKV;
  const Tensor q = slots[0];
  const Tensor k = qkv ? q : slots[1];
  const Tensor v = qkv ? q : kv ? k : slots[2];
  std::vector<Tensor> h = heads_first(d, q, k, v);
  if (d.group() > 1)
    for (int j : {1, 2}) h[j] = repeat_interleave(h[j], d.group(), 1);
  return h;
}

// The row way: the kernels' call over the canonical layout, the backward op, views apart.
std::vector<Tensor> rows_grad(const SdpaCall& s, const std::vector<Tensor>& live,
                              const Tensor& keep, const Tensor& g) {
  const Dims& d = s.d;
  const std::vector<Tensor> slots = attention_slots(live);
  const std::vector<Tensor> h = canonical(d, slots);
  const Tensor q4 = h[0].contiguous(), k4 = h[1].contiguous(), v4 = h[2].contiguous();
  const Tensor g4 = (d.heads_last ? transpose(g, 1, 2) : g).contiguous();

  auto c = std::make_shared<RowsCtx>();
  c->mask = s.mask;
  Dims d4 = d;
  d4.heads_last = false;
  d4.packing = Dims::kNone;
  d4.NKV = 0;
  c->plan = make_plan(s.mask, d.T, d.S);
  c->lm = lower_mask(c->mask, d4, q4.dtype());
  c->lm.rows.key_block = nullptr;  // rows::mask_row reads the parts themselves, in double
  c->call.d = d4;
  c->call.plan = &c->plan;
  c->call.mask = &c->lm.rows;
  c->call.scale = s.scale;
  if (keep.defined()) {
    c->keep = keep;
    c->call.dropout = true;
    c->call.p = s.opts.dropout_p;
    c->call.keep = c->keep.data_ptr();
  }
  const Tensor packed = backward_op(c, q4, k4, v4, g4);
  const int64_t nq = q4.numel(), nk = k4.numel(), nv = v4.numel();
  const Tensor dq4 = reshape(narrow(packed, 0, 0, nq), q4.shape());
  const Tensor dk4 = reshape(narrow(packed, 0, nq, nk), k4.shape());
  const Tensor dv4 = reshape(narrow(packed, 0, nq + nk, nv), v4.shape());

  return slot_grads({q4, k4, v4}, {dq4, dk4, dv4}, slots);  // back through the views
}

// The composed way: the forward again as recorded ops from the slots, differentiated by the tape.
std::vector<Tensor> composed_grad(const SdpaCall& s, const std::vector<Tensor>& live,
                                  const Tensor& g) {
  const Dims& d = s.d;
  const std::vector<Tensor> slots = attention_slots(live);
  size_t i = d.packing == Dims::kQKV ? 1 : d.packing == Dims::kKV ? 2 : 3;
  AttentionMask m = s.mask;
  if (s.mask_grad) m = m.with_additive(slots[i++]);
  if (s.rel_grad) m = m.with_rel_table(slots[i++]);
  if (s.alibi_grad) m = m.with_slopes(slots[i++]);
  const AttentionMask host = s.mask.on(kCPU);
  const std::vector<Tensor> h = canonical(d, slots);
  const Tensor add = composed_additive(d, m, s.mask_grad ? m.additive_part() : host.additive_part(),
                                       h[0].device());
  Tensor out = composed_sdpa(h[0], h[1], h[2], host, add, SDPAOptions(), s.scale).output;
  if (d.heads_last) out = transpose(out, 1, 2);
  return slot_grads({out}, {g}, slots);  // partial derivatives: the walk stops at the slots
}

}  // namespace

std::vector<Tensor> sdpa_create_graph(const SdpaCall& c, const Tensor& q, const Tensor& k,
                                      const Tensor& v, const Tensor& keep, const Tensor& g) {
  // The node's inputs with their histories.
  const bool qkv = c.d.packing == Dims::kQKV, kv = c.d.packing == Dims::kKV;
  std::vector<Tensor> live;
  live.push_back(q);
  if (!qkv) live.push_back(k);
  if (!qkv && !kv) live.push_back(v);
  if (c.mask_grad) live.push_back(c.mask.additive_part());
  if (c.rel_grad) live.push_back(c.mask.rel_table());
  if (c.alibi_grad) live.push_back(c.mask.slopes());
  const bool data_grad = c.mask_grad || c.rel_grad || c.alibi_grad;
  if (!data_grad && !q.device().is_cuda()) return rows_grad(c, live, keep, g);
  if (c.dropout)
    throw Error(fmt::format(
        "backward of {}: create_graph with dropout and a differentiable mask or position bias "
        "is not supported yet (drop the dropout, or the bias's requires_grad, for second order)",
        "scaled_dot_product_attention"));
  return composed_grad(c, live, g);
}

}  // namespace tg::detail
