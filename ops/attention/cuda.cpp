// ops/attention_cuda.cpp — scaled_dot_product_attention on a CUDA device, in every layout the CPU
// takes (kern::AttentionLayout: heads first, heads last, packed qkv, q with packed kv). Two paths,
// one semantics (the CPU's, ops/attention.cpp):
//   fused: cuda::attention_forward/backward (FlashAttention-2 style: online softmax, the
//     log-sum-exp saved, O(T) extra memory, tiles outside the structural key range skipped),
//     reading and writing every layout in place, used when there is no dropout, no need_weights,
//     no probe and hs, hs_v <= 128;
//   composed: QKᵀ, the dense mask, softmax, dropout and P·V as ops (their own backward) on
//     (B, NH, T, hs) views, for dropout, attention weights, the introspection probe and large
//     heads.
// Mask tensors may live on the CPU or on q's device: they are copied where each path reads them.
// ops/attention.cpp reaches it through ops/attention_cuda.hpp after the op's checks.
// Deliberately not here: the kernels (cuda/attention.cu), the mask's lowering
// (ops/attention_mask.cpp, shared with the CPU), the CPU path.
#include "ops/attention/internal.hpp"

#include "autograd/grad_detail.hpp"
#include "ops/cuda_dispatch.hpp"
#include "ops/detail.hpp"
#include "ops/ops.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace tg::detail {

namespace {
using Dims = kern::AttentionLayout;
constexpr const char* kSdpa = "scaled_dot_product_attention";
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor moved(const Tensor& t, Device d) { return t.defined() ? t.detach().to(d) : t; }

// Raises the CPU's error for the first fully masked row (lse = -inf), naming batch, head, row.
void check_fully_masked(const Tensor& lse, int64_t NH, int64_t T) {
  std::vector<double> l = lse.to_vector<double>();
  for (size_t r = 0; r < l.size(); ++r)
    if (std::isinf(l[r]) && l[r] < 0) {
      const int64_t i = static_cast<int64_t>(r);
      throw Error(
          fmt::format("{}: query row {} of batch {}, head {} has no allowed key "
                      "(error_on_fully_masked is set)",
                      kSdpa, i % T, i / T / NH, i / T % NH));
    }
}

// The position biases on the device for the fused kernels (MaskDesc::rel, alibi): the table and
// the slopes in float64, and each diagonal's bucket, computed here by AttentionMask::t5_bucket
// (the CPU's float arithmetic, so both backends pick the same buckets).
struct BiasTables {
  Tensor rel, bucket, alibi;
};
BiasTables bias_tables(const AttentionMask& m, const Dims& d, Device dev, kern::MaskDesc& desc) {
  BiasTables t;
  desc.diag_lo = -(d.T - 1 + desc.shift);
  if (m.rel_table_.defined()) {
    t.rel = m.rel_table_.detach().to(kFloat64).to(dev).contiguous();
    const int64_t n = t.rel.size(1);
    std::vector<int64_t> bucket(static_cast<size_t>(std::max<int64_t>(d.T + d.S - 1, 0)));
    for (size_t e = 0; e < bucket.size(); ++e)
      bucket[e] = AttentionMask::t5_bucket(desc.diag_lo + static_cast<int64_t>(e),
                                           m.rel_bidirectional_, n, m.rel_max_distance_);
    t.bucket = tensor(bucket).to(dev);
    desc.rel = static_cast<const double*>(t.rel.data_ptr());
    desc.rel_bucket = static_cast<const int64_t*>(t.bucket.data_ptr());
    desc.rel_n = n;
    desc.rel_hs = t.rel.size(0) == 1 ? 0 : n;
  }
  if (m.alibi_slopes_.defined()) {
    t.alibi = m.alibi_slopes_.detach().to(kFloat64).to(dev).contiguous();
    desc.alibi = static_cast<const double*>(t.alibi.data_ptr());
  }
  return t;
}

// The mask's lowering for the fused kernels and the device memory it points into besides the
// mask's own tensors (the biases'), kept alive together by the tape node.
struct FusedMask {
  MaskLowering low;
  BiasTables bias;
};

AttentionResult fused(const Dims& d, const Tensor& q, const Tensor& k, const Tensor& v,
                      const std::vector<Tensor>& inputs, const AttentionMask& m, double scale) {
  const Device dev = q.device();
  // The mask's tensors are on q's device (attention_mask_on); at most kMaxBlocked blocked parts.
  auto fm = std::make_shared<FusedMask>();
  fm->low = mask_desc(m, d.B, d.NH, d.T, d.S);
  fm->bias = bias_tables(m, d, dev, fm->low.desc);
  std::shared_ptr<const FusedMask> md = fm;
  const kern::MaskDesc& desc = md->low.desc;
  // A differentiable table or slopes is one more input of the tape node (after q, k, v).
  const bool rel_grad = m.rel_table_.defined() && m.rel_table_.requires_grad() && grad_enabled();
  const bool alibi_grad =
      m.alibi_slopes_.defined() && m.alibi_slopes_.requires_grad() && grad_enabled();
  std::vector<Tensor> node_inputs = inputs;
  if (rel_grad) node_inputs.push_back(m.rel_table_);
  if (alibi_grad) node_inputs.push_back(m.alibi_slopes_);
  AttentionResult res;
  res.output = zeros(d.heads_last ? Shape{d.B, d.T, d.NH, d.hsv} : Shape{d.B, d.NH, d.T, d.hsv},
                     q.dtype(), dev);
  Tensor lse = full({d.B, d.NH, d.T}, -kInf, q.dtype(), dev);
  if (res.output.numel() > 0 && d.S > 0)
    kernels(kSdpa, dev)
        .attention_forward(cdt(q.dtype()), res.output.data_ptr(), lse.data_ptr(), q.data_ptr(),
                           k.data_ptr(), v.data_ptr(), d, scale, desc);
  if (m.errors_on_fully_masked()) check_fully_masked(lse, d.NH, d.T);
  if (needs_record({&q, &k, &v}) || rel_grad || alibi_grad) {
    const double pairs = static_cast<double>(d.B) * d.NH * d.T * d.S;
    const bool qkv = d.packing == Dims::kQKV, kv = d.packing == Dims::kKV;
    RecordInfo info =
        RecordInfo()
            .flops(pairs * (2.0 * d.hs + 2.0 * d.hsv + 5), pairs * (4.0 * d.hs + 4.0 * d.hsv + 3))
            .rows(3, attention_rows(d));
    if (qkv)
      info.saved(q, res.output, lse);
    else if (kv)
      info.saved(q, k, res.output, lse);
    else
      info.saved(q, k, v, res.output, lse);
    // The mask's tensors stay alive with the node: md points into them.
    record(
        kSdpa, res.output, node_inputs, info.differentiable(),
        [d, m, md, scale, lse, qkv, kv, rel_grad, alibi_grad, qd = q.detach(), kd = k.detach(),
         vd = v.detach(), od = res.output.detach()](const Tensor& g) -> std::vector<Tensor> {
          if (creating_graph()) {  // the composed path's gradients, recorded
            std::vector<Tensor> live{saved_input(qd, 0)};
            if (!qkv) live.push_back(saved_input(kd, live.size()));
            if (!qkv && !kv) live.push_back(saved_input(vd, live.size()));
            if (rel_grad) live.push_back(saved_input(m.rel_table_.detach(), live.size()));
            if (alibi_grad) live.push_back(saved_input(m.alibi_slopes_.detach(), live.size()));
            return sdpa_grad_recorded(d, live, m, false, rel_grad, alibi_grad, scale, g);
          }
          // Packed: one gradient tensor for q, k and v (or k and v), written at their offsets.
          Tensor dq = zeros(qd.shape(), qd.dtype(), qd.device());
          Tensor dk = qkv ? dq : zeros(kd.shape(), kd.dtype(), kd.device());
          Tensor dv = qkv ? dq : kv ? dk : zeros(vd.shape(), vd.dtype(), vd.device());
          // The position biases' sums per (b, h), float64, from the same kernel call.
          Tensor d_rel =
              rel_grad ? zeros({d.B, d.NH, m.rel_table_.size(1)}, kFloat64, qd.device()) : Tensor();
          Tensor d_alibi = alibi_grad ? zeros({d.B, d.NH}, kFloat64, qd.device()) : Tensor();
          if (g.numel() > 0 && d.S > 0)
            kernels("scaled_dot_product_attention backward", qd.device())
                .attention_backward(cdt(qd.dtype()), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(),
                                    rel_grad ? static_cast<double*>(d_rel.data_ptr()) : nullptr,
                                    alibi_grad ? static_cast<double*>(d_alibi.data_ptr()) : nullptr,
                                    g.data_ptr(), qd.data_ptr(), kd.data_ptr(), vd.data_ptr(),
                                    od.data_ptr(), lse.data_ptr(), d, scale, md->low.desc);
          std::vector<Tensor> out{dq};
          if (!qkv) out.push_back(dk);
          if (!qkv && !kv) out.push_back(dv);
          append_bias_grads(out, m, d_rel, d_alibi);
          return out;
        });
  }
  return res;
}

// The composed path: every step an op on the device, so the tape differentiates it.
// q, k, v are (B, NH, T|S, hs) views; the output is (B, NH, T, hs_v).
AttentionResult composed(const Tensor& q, const Tensor& k, const Tensor& v,
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
  if (opts.probe && (opts.probe->on_forward || opts.probe->on_backward)) {
    auto probe = std::make_shared<AttentionProbe>(*opts.probe);
    if (probe->on_forward) probe->on_forward(scores.detach(), P.detach());
    if (probe->on_backward && P.requires_grad()) {
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
  }
  const bool drop = opts.training && opts.dropout_p > 0;
  Tensor Pd = drop ? dropout(P, opts.dropout_p, true) : P;
  AttentionResult res;
  res.output = matmul(Pd, v);
  if (opts.need_weights) res.weights = Pd;
  return res;
}
}  // namespace

// The composed path's views (ops/attention_cuda.hpp).
std::vector<Tensor> heads_first(const Dims& d, const Tensor& q, const Tensor& k, const Tensor& v) {
  auto part = [](const Tensor& t, int64_t i) { return squeeze(narrow(t, 2, i, 1), 2); };
  std::vector<Tensor> r{q, k, v};
  if (d.packing == Dims::kQKV) r = {part(q, 0), part(q, 1), part(q, 2)};
  if (d.packing == Dims::kKV) r = {q, part(k, 0), part(k, 1)};
  if (d.heads_last)
    for (Tensor& t : r) t = transpose(t, 1, 2);
  return r;
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
    record("alias", out, {t}, RecordInfo().flops(0, 0).saved().differentiable(),
           [](const Tensor& g) -> std::vector<Tensor> { return {g}; });
    slots.push_back(out);
  }
  return slots;
}

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

std::vector<Tensor> sdpa_grad_recorded(const Dims& d, const std::vector<Tensor>& live,
                                       const AttentionMask& mask, bool mask_grad, bool rel_grad,
                                       bool alibi_grad, double scale, const Tensor& g) {
  const std::vector<Tensor> slots = attention_slots(live);
  const bool qkv = d.packing == Dims::kQKV, kv = d.packing == Dims::kKV;
  size_t i = 0;
  const Tensor q = slots[i++];
  const Tensor k = qkv ? q : slots[i++];
  const Tensor v = qkv ? q : kv ? k : slots[i++];
  AttentionMask m = mask;
  if (mask_grad) m.additive_ = slots[i++];
  if (rel_grad) m.rel_table_ = slots[i++];
  if (alibi_grad) m.alibi_slopes_ = slots[i++];
  const Device dev = q.device();
  const AttentionMask host = attention_mask_on(mask, kCPU);
  std::vector<Tensor> h = heads_first(d, q, k, v);
  if (d.group() > 1)
    for (int j : {1, 2}) h[j] = repeat_interleave(h[j], d.group(), 1);
  Tensor add = mask_grad ? m.additive_ : host.additive_;
  if (m.rel_table_.defined() || m.alibi_slopes_.defined()) {
    const Tensor db = m.dense_bias(d.NH, d.T, d.S).to(dev);
    add = add.defined() ? tg::add(add.to(dev), db) : db;
  }
  Tensor out = composed(h[0], h[1], h[2], host, add, SDPAOptions(), scale).output;
  if (d.heads_last) out = transpose(out, 1, 2);
  return slot_grads({out}, {g}, slots);  // partial derivatives: the walk stops at the slots
}

// The mask with its tensors on device d.
AttentionMask attention_mask_on(const AttentionMask& mask, Device d) {
  AttentionMask m = mask;
  m.key_allowed_ = moved(m.key_allowed_, d);
  m.key_lengths_ = moved(m.key_lengths_, d);
  m.allowed_ = moved(m.allowed_, d);
  m.additive_ = moved(m.additive_, d);
  return m;
}

AttentionResult cuda_sdpa(const Dims& d, const Tensor& q, const Tensor& k, const Tensor& v,
                          const std::vector<Tensor>& inputs, const AttentionMask& mask,
                          const SDPAOptions& opts, double scale) {
  check_same_device(q, k, kSdpa, "q", "k");
  check_same_device(q, v, kSdpa, "q", "v");
  if (mask.additive_.defined() && mask.additive_.dtype() != q.dtype())
    throw Error(fmt::format("{}: additive mask {} is {} but q {} is {}", kSdpa,
                            shape_str(mask.additive_.shape()), dtype_name(mask.additive_.dtype()),
                            shape_str(q.shape()), dtype_name(q.dtype())));
  const bool drop = opts.training && opts.dropout_p > 0;
  // A differentiable additive mask takes the composed path, whose ops carry dScores back to it
  // (the fused kernels read the mask as a constant).
  const bool mask_grad =
      mask.additive_.defined() && mask.additive_.requires_grad() && grad_enabled();
  // Position biases (relative, ALiBi) are added per entry by the fused kernels, whose backward
  // also gives their gradients; the composed path makes them dense by recorded ops
  // (AttentionMask::dense_bias, differentiable).
  const bool bias = mask.rel_table_.defined() || mask.alibi_slopes_.defined();
  const bool fuse = !drop && !opts.need_weights && !opts.probe && !mask_grad &&
                    d.hs <= kern::kAttentionMaxHeadSize && d.hsv <= kern::kAttentionMaxHeadSize &&
                    mask.blocked_.size() <= static_cast<size_t>(kern::kMaxBlocked);
  if (fuse) return fused(d, q, k, v, inputs, attention_mask_on(mask, q.device()), scale);
  const AttentionMask host = attention_mask_on(mask, kCPU);
  // The additive part not detached when it requires grad (the host copy serves dense_allowed).
  std::vector<Tensor> h = heads_first(d, q, k, v);
  if (d.group() > 1)  // grouped-query: the composed path repeats k and v (the fused one never does)
    for (int i : {1, 2}) h[i] = repeat_interleave(h[i], d.group(), 1);
  Tensor add = mask_grad ? mask.additive_ : host.additive_;
  if (bias) {  // (NH or 1, T, S) on the device, differentiable w.r.t. the table and the slopes
    Tensor db = mask.dense_bias(d.NH, d.T, d.S).to(q.device());
    add = add.defined() ? tg::add(add.to(q.device()), db) : db;
  }
  AttentionResult res = composed(h[0], h[1], h[2], host, add, opts, scale);
  if (d.heads_last) res.output = transpose(res.output, 1, 2).contiguous();
  if (mask.errors_on_fully_masked()) {
    // Same check as the CPU: any row whose keys are all blocked.
    Tensor any = sum(host.dense_allowed(d.B, d.NH, d.T, d.S), {-1});
    std::vector<int64_t> cnt = any.to_vector<int64_t>();
    Tensor lse_like = full({static_cast<int64_t>(cnt.size())}, 0.0, kFloat64);
    for (size_t r = 0; r < cnt.size(); ++r)
      if (cnt[r] == 0) lse_like.data<double>()[r] = -kInf;
    check_fully_masked(lse_like, d.NH, d.T);
  }
  return res;
}

}  // namespace tg::detail
