// ops/attention_cuda.cpp — scaled_dot_product_attention on a CUDA device. Two paths, one
// semantics (the CPU's, ops/attention.cpp):
//   fused: cuda::attention_forward/backward (FlashAttention-2 style: online softmax, the
//     log-sum-exp saved, O(T) extra memory, tiles outside the structural key range skipped),
//     used when there is no dropout, no need_weights, no probe and hs, hs_v <= 128;
//   composed: QKᵀ, the dense mask, softmax, dropout and P·V as ops (their own backward), for
//     dropout, attention weights, the introspection probe and large heads.
// Mask tensors may live on the CPU or on q's device: they are copied where each path reads them.
// ops/attention.cpp reaches it through ops/attention_cuda.hpp after the op's checks.
// Deliberately not here: the kernels (cuda/attention.cu), the mask's lowering
// (ops/attention_mask.cpp, shared with the CPU), the CPU path.
#include "ops/attention_cuda.hpp"
#include "ops/attention_desc.hpp"
#include "ops/cuda_dispatch.hpp"
#include "ops/detail.hpp"
#include "ops/ops.hpp"

#include <cmath>
#include <limits>
#include <memory>

namespace tg::detail {

namespace {
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

AttentionResult fused(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMask& m,
                      double scale) {
  const int64_t B = q.size(0), NH = q.size(1), T = q.size(2), S = k.size(2), hs = q.size(3),
                hsv = v.size(3);
  const Device dev = q.device();
  // The mask's tensors are on q's device (attention_mask_on); at most kMaxBlocked blocked parts.
  auto md = std::make_shared<const MaskLowering>(mask_desc(m, B, NH, T, S));
  AttentionResult res;
  res.output = zeros({B, NH, T, hsv}, q.dtype(), dev);
  Tensor lse = full({B, NH, T}, -kInf, q.dtype(), dev);
  if (res.output.numel() > 0 && S > 0)
    kernels(kSdpa, dev)
        .attention_forward(cdt(q.dtype()), res.output.data_ptr(), lse.data_ptr(), q.data_ptr(),
                           k.data_ptr(), v.data_ptr(), B, NH, T, S, hs, hsv, scale, md->desc);
  if (m.errors_on_fully_masked()) check_fully_masked(lse, NH, T);
  if (needs_record({&q, &k, &v})) {
    const double pairs = static_cast<double>(B) * NH * T * S;
    // The mask's tensors stay alive with the node: md points into them.
    record(kSdpa, res.output, {q, k, v},
           RecordInfo()
               .flops(pairs * (2.0 * hs + 2.0 * hsv + 5), pairs * (4.0 * hs + 4.0 * hsv + 3))
               .saved(q, k, v, res.output, lse)
               .rows(3, "b,h,t|b,h,t|b,h,s|b,h,s"),
           [m, md, scale, lse, qd = q.detach(), kd = k.detach(), vd = v.detach(),
            od = res.output.detach()](const Tensor& g) -> std::vector<Tensor> {
             const int64_t B = qd.size(0), NH = qd.size(1), T = qd.size(2), S = kd.size(2),
                           hs = qd.size(3), hsv = vd.size(3);
             Tensor dq = zeros(qd.shape(), qd.dtype(), qd.device());
             Tensor dk = zeros(kd.shape(), kd.dtype(), kd.device());
             Tensor dv = zeros(vd.shape(), vd.dtype(), vd.device());
             if (g.numel() > 0 && S > 0)
               kernels("scaled_dot_product_attention backward", qd.device())
                   .attention_backward(cdt(qd.dtype()), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(),
                                       g.data_ptr(), qd.data_ptr(), kd.data_ptr(), vd.data_ptr(),
                                       od.data_ptr(), lse.data_ptr(), B, NH, T, S, hs, hsv, scale,
                                       md->desc);
             return {dq, dk, dv};
           });
  }
  return res;
}

// The composed path: every step an op on the device, so the tape differentiates it.
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

// The mask with its tensors on device d.
AttentionMask attention_mask_on(const AttentionMask& mask, Device d) {
  AttentionMask m = mask;
  m.key_allowed_ = moved(m.key_allowed_, d);
  m.key_lengths_ = moved(m.key_lengths_, d);
  m.allowed_ = moved(m.allowed_, d);
  m.additive_ = moved(m.additive_, d);
  return m;
}

AttentionResult cuda_sdpa(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                          const AttentionMask& mask, const SDPAOptions& opts, double scale) {
  // the kernels read (B, NH, T, hs) row-major: a heads-last caller's transposed views are copied
  const Tensor q = contig(q_in), k = contig(k_in), v = contig(v_in);
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
  const bool fuse = !drop && !opts.need_weights && !opts.probe && !mask_grad &&
                    q.size(3) <= kern::kAttentionMaxHeadSize &&
                    v.size(3) <= kern::kAttentionMaxHeadSize &&
                    mask.blocked_.size() <= static_cast<size_t>(kern::kMaxBlocked);
  if (fuse) return fused(q, k, v, attention_mask_on(mask, q.device()), scale);
  const AttentionMask host = attention_mask_on(mask, kCPU);
  // The additive part not detached when it requires grad (the host copy serves dense_allowed).
  AttentionResult res =
      composed(q, k, v, host, mask_grad ? mask.additive_ : host.additive_, opts, scale);
  if (mask.errors_on_fully_masked()) {
    // Same check as the CPU: any row whose keys are all blocked.
    Tensor any = sum(host.dense_allowed(q.size(0), q.size(1), q.size(2), k.size(2)), {-1});
    std::vector<int64_t> cnt = any.to_vector<int64_t>();
    Tensor lse_like = full({static_cast<int64_t>(cnt.size())}, 0.0, kFloat64);
    for (size_t r = 0; r < cnt.size(); ++r)
      if (cnt[r] == 0) lse_like.data<double>()[r] = -kInf;
    check_fully_masked(lse_like, q.size(1), q.size(2));
  }
  return res;
}

}  // namespace tg::detail
