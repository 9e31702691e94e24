// ops/attention/cuda.cpp — the CUDA half of scaled_dot_product_attention, thin glue between
// sdpa() (sdpa.cpp: checks, the call resolved, the tape node) and the kernels, in every layout the
// CPU takes (kern::AttentionLayout: heads first, heads last, packed qkv, q with packed kv). Two
// paths, one semantics (the CPU's):
//   fused: cuda::attention_forward/backward (cuda/attention.cu, FlashAttention-2 style: online
//     softmax, the log-sum-exp saved, O(T) extra memory, tiles outside the structural key range
//     skipped), reading and writing every layout in place, used when there is no dropout, no
//     need_weights, no probe, no differentiable additive mask and hs, hs_v <= 128;
//   composed: composed_sdpa (composed.cpp), ops on (B, NH, T, hs) views that record themselves,
//     for everything else.
// Mask tensors may live on the CPU or on q's device: they are copied where each path reads them.
// Deliberately not here: the kernels (cuda/attention.cu), the mask's lowering (lowering.cpp,
// shared with the CPU), create_graph (create_graph.cpp), the CPU path.
#include "ops/attention/internal.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/ops.hpp"

#include <cmath>
#include <limits>
#include <memory>

namespace tg::detail {

namespace {
using Dims = kern::AttentionLayout;
constexpr const char* kSdpa = "scaled_dot_product_attention";
constexpr double kInf = std::numeric_limits<double>::infinity();

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

// The mask's lowering for the fused kernels and the device memory it points into besides the
// mask's own tensors (the biases'), kept alive together by the tape node.
struct FusedMask {
  AttentionMask mask;  // its tensors on q's device
  MaskLowering low;
  BiasTables bias;
};

// The fused kernels' backward: dq, dk, dv (one tensor when packed, written at its offsets) and the
// position biases' gradients.
std::vector<Tensor> fused_backward(const SdpaCall& c, const FusedMask& fm, const Tensor& qd,
                                   const Tensor& kd, const Tensor& vd, const Tensor& od,
                                   const Tensor& lse, const Tensor& g) {
  const Dims& d = c.d;
  const bool qkv = d.packing == Dims::kQKV, kv = d.packing == Dims::kKV;
  Tensor dq = zeros(qd.shape(), qd.dtype(), qd.device());
  Tensor dk = qkv ? dq : zeros(kd.shape(), kd.dtype(), kd.device());
  Tensor dv = qkv ? dq : kv ? dk : zeros(vd.shape(), vd.dtype(), vd.device());
  // The position biases' sums per (b, h), float64, from the same kernel call.
  Tensor d_rel = c.rel_grad ? zeros({d.B, d.NH, fm.mask.rel_table().size(1)}, kFloat64, qd.device())
                            : Tensor();
  Tensor d_alibi = c.alibi_grad ? zeros({d.B, d.NH}, kFloat64, qd.device()) : Tensor();
  if (g.numel() > 0 && d.S > 0)
    kernels("scaled_dot_product_attention backward", qd.device())
        .attention_backward(cdt(qd.dtype()), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(),
                            c.rel_grad ? static_cast<double*>(d_rel.data_ptr()) : nullptr,
                            c.alibi_grad ? static_cast<double*>(d_alibi.data_ptr()) : nullptr,
                            g.data_ptr(), qd.data_ptr(), kd.data_ptr(), vd.data_ptr(),
                            od.data_ptr(), lse.data_ptr(), d, c.scale, fm.low.desc);
  std::vector<Tensor> out{dq};
  if (!qkv) out.push_back(dk);
  if (!qkv && !kv) out.push_back(dv);
  append_bias_grads(out, fm.mask, d_rel, d_alibi);
  return out;
}

SdpaForward fused(const SdpaCall& c, const Tensor& q, const Tensor& k, const Tensor& v) {
  const Dims& d = c.d;
  const Device dev = q.device();
  // The mask's tensors on q's device; at most kMaxBlocked blocked parts.
  auto fm = std::make_shared<FusedMask>();
  fm->mask = c.mask.on(dev);
  // the kernels read the additive part in q's dtype: a bfloat16 / float16 one beside float32
  // copies of reduced operands (sdpa.cpp's reduced_sdpa) is widened, exactly
  const Tensor& add = fm->mask.additive_part();
  if (add.defined() && add.dtype() != q.dtype())
    fm->mask = fm->mask.with_additive(add.detach().to(q.dtype()));
  fm->low = mask_desc(fm->mask, d.B, d.NH, d.T, d.S);
  fm->bias = bias_tables(fm->mask, d, dev, fm->low.desc);
  SdpaForward f;
  f.res.output = zeros(d.heads_last ? Shape{d.B, d.T, d.NH, d.hsv} : Shape{d.B, d.NH, d.T, d.hsv},
                       q.dtype(), dev);
  Tensor lse = full({d.B, d.NH, d.T}, -kInf, q.dtype(), dev);
  if (f.res.output.numel() > 0 && d.S > 0)
    kernels(kSdpa, dev)
        .attention_forward(cdt(q.dtype()), f.res.output.data_ptr(), lse.data_ptr(), q.data_ptr(),
                           k.data_ptr(), v.data_ptr(), d, c.scale, fm->low.desc);
  if (c.mask.errors_on_fully_masked()) check_fully_masked(lse, d.NH, d.T);
  if (!c.record) return f;
  const double pairs = static_cast<double>(d.B) * d.NH * d.T * d.S;
  f.info.flops(pairs * (2.0 * d.hs + 2.0 * d.hsv + 5), pairs * (4.0 * d.hs + 4.0 * d.hsv + 3));
  // What the backward reads besides q, k, v (sdpa() saves those): the output and the row sums.
  const Saved so = c.widened ? f.info.save(f.res.output) : f.info.save_output(f.res.output);
  f.info.save(lse);
  // The mask's tensors stay alive with the node: the lowering points into them.
  std::shared_ptr<const FusedMask> md = fm;
  f.backward = [c, md, lse, qd = q.detach(), kd = k.detach(), vd = v.detach(),
                so](const Tensor& g) {
    return fused_backward(c, *md, qd, kd, vd, so.get(), lse, g);
  };
  return f;
}

// The same check as the CPU's for the composed path: any row whose keys are all blocked.
void check_rows_composed(const Dims& d, const AttentionMask& host) {
  Tensor any = sum(host.dense_allowed(d.B, d.NH, d.T, d.S), {-1});
  std::vector<int64_t> cnt = any.to_vector<int64_t>();
  Tensor lse_like = full({static_cast<int64_t>(cnt.size())}, 0.0, kFloat64);
  for (size_t r = 0; r < cnt.size(); ++r)
    if (cnt[r] == 0) lse_like.data<double>()[r] = -kInf;
  check_fully_masked(lse_like, d.NH, d.T);
}

// The mask's bfloat16 / float16 tensors (additive part, relative table, slopes) in float32 when q
// is float32 (sdpa.cpp's reduced_sdpa runs on float32 copies): recorded casts, so the composed
// ops' gradients reach them, rounded once, and the dense bias is summed in float32. Other masks as
// they are.
AttentionMask widened_mask(AttentionMask m, DType dt) {
  auto wide = [dt](const Tensor& t) {
    return t.defined() && is_reduced(t.dtype()) && dt == kFloat32;
  };
  if (wide(m.additive_part())) m = m.with_additive(m.additive_part().to(dt));
  if (wide(m.rel_table())) m = m.with_rel_table(m.rel_table().to(dt));
  if (wide(m.slopes())) m = m.with_slopes(m.slopes().to(dt));
  return m;
}
}  // namespace

SdpaForward cuda_sdpa(const SdpaCall& c, const Tensor& q, const Tensor& k, const Tensor& v) {
  const Dims& d = c.d;
  // A differentiable additive mask takes the composed path, whose ops carry dScores back to it
  // (the fused kernels read the mask as a constant). Position biases (relative, ALiBi) are added
  // per entry by the fused kernels, whose backward also gives their gradients.
  const bool fuse = !c.dropout && !c.opts.need_weights && !c.opts.probe && !c.mask_grad &&
                    d.hs <= kern::kAttentionMaxHeadSize && d.hsv <= kern::kAttentionMaxHeadSize &&
                    c.mask.blocked_parts().size() <= static_cast<size_t>(kern::kMaxBlocked);
  if (fuse) return fused(c, q, k, v);
  const AttentionMask mask = widened_mask(c.mask, q.dtype());
  const AttentionMask host = mask.on(kCPU);
  std::vector<Tensor> h = heads_first(d, q, k, v);
  if (d.group() > 1)  // grouped-query: the composed path repeats k and v (the fused one never does)
    for (int i : {1, 2}) h[i] = repeat_interleave(h[i], d.group(), 1);
  // The additive part not detached when it requires grad (the host copy serves dense_allowed).
  const Tensor add = composed_additive(
      d, mask, c.mask_grad ? mask.additive_part() : host.additive_part(), q.device());
  SdpaForward f;
  f.res = composed_sdpa(h[0], h[1], h[2], host, add, c.opts, c.scale);
  if (d.heads_last) f.res.output = transpose(f.res.output, 1, 2).contiguous();
  if (c.mask.errors_on_fully_masked()) check_rows_composed(d, host);
  return f;
}

}  // namespace tg::detail
