// ops/attention_grad.cpp — create_graph through the fused CPU attention without a dense T×S
// matrix: the first-order backward becomes an op, scaled_dot_product_attention_backward, over
// q, k, v, dO in the canonical layout (B, NH, T|S, hs), computed by cpu::attention_grad_rows (P
// recomputed row by row) and differentiated by cpu::attention_grad2_rows
// (ops/cpu/attention_grad2.cpp has the formulas; docs/backprop-through-attention.md derives
// them). One node with one output: dq, dk, dv packed flat, viewed apart by recorded ops. The
// node's own backward is raw: a third derivative through it is refused by the engine. Heads
// last, packed operands and grouped heads reach the canonical layout by recorded views, and the
// gradients go back through them by a walk that stops at the node's inputs.
// Deliberately not here: the fused first-order path (ops/attention.cpp), the composed second
// order for differentiable masks and biases (ops/attention_cuda.cpp).
#include "ops/attention/internal.hpp"

#include "ops/detail.hpp"
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
  const Tensor qd = q4.detach(), kd = k4.detach(), vd = v4.detach(), gd = g4.detach();
  const Dims& d = c->call.d;
  const double pairs = static_cast<double>(d.B) * d.NH * c->plan.per_bh;
  record(kOp, out, {q4, k4, v4, g4},
         RecordInfo()
             .flops(pairs * (4.0 * d.hs + 4.0 * d.hsv), pairs * (8.0 * d.hs + 10.0 * d.hsv))
             .saved(qd, kd, vd, gd),
         [c, qd, kd, vd, gd, nq, nk](const Tensor& gg_in) -> std::vector<Tensor> {
           const Tensor gg = gg_in.contiguous();
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

}  // namespace

std::vector<Tensor> sdpa_grad_rows(const Dims& d, const std::vector<Tensor>& live,
                                   const AttentionMask& mask, double scale, const Tensor& keep,
                                   double p, const Tensor& g) {
  const std::vector<Tensor> slots = attention_slots(live);
  const bool qkv = d.packing == Dims::kQKV, kv = d.packing == Dims::kKV;
  const Tensor q = slots[0];
  const Tensor k = qkv ? q : slots[1];
  const Tensor v = qkv ? q : kv ? k : slots[2];
  std::vector<Tensor> h = heads_first(d, q, k, v);  // (B, NH, T|S, hs) views
  if (d.group() > 1)
    for (int j : {1, 2}) h[j] = repeat_interleave(h[j], d.group(), 1);
  const Tensor q4 = h[0].contiguous(), k4 = h[1].contiguous(), v4 = h[2].contiguous();
  const Tensor g4 = (d.heads_last ? transpose(g, 1, 2) : g).contiguous();

  auto c = std::make_shared<RowsCtx>();
  c->mask = mask;
  Dims d4 = d;
  d4.heads_last = false;
  d4.packing = Dims::kNone;
  d4.NKV = 0;
  c->plan = make_plan(mask, d.T, d.S);
  c->lm = lower_mask(c->mask, d4, q4.dtype());
  c->lm.rows.key_block = nullptr;  // rows::mask_row reads the parts themselves, in double
  c->call.d = d4;
  c->call.plan = &c->plan;
  c->call.mask = &c->lm.rows;
  c->call.scale = scale;
  if (keep.defined()) {
    c->keep = keep;
    c->call.dropout = true;
    c->call.p = p;
    c->call.keep = c->keep.data_ptr();
  }
  const Tensor packed = backward_op(c, q4, k4, v4, g4);
  const int64_t nq = q4.numel(), nk = k4.numel(), nv = v4.numel();
  const Tensor dq4 = reshape(narrow(packed, 0, 0, nq), q4.shape());
  const Tensor dk4 = reshape(narrow(packed, 0, nq, nk), k4.shape());
  const Tensor dv4 = reshape(narrow(packed, 0, nq + nk, nv), v4.shape());

  return slot_grads({q4, k4, v4}, {dq4, dk4, dv4}, slots);  // back through the views
}

}  // namespace tg::detail
