// ops/random/dropout.cpp — inverted dropout, forward and backward side by side.
//
// Training: each element is kept with probability 1-p (one uniform draw per element, in row-major
// order, from tg::default_generator(), so tg::manual_seed(s) fixes the mask) and kept elements are
// scaled by 1/(1-p). Saved for backward: keep = mask·scale, the same shape and dtype as x;
// dx = dout·keep. Eval mode or p == 0 returns x itself (no copy, no node); p == 1 gives zeros and
// a zero gradient without drawing. The op: check → allocate → kernel (cpu::dropout_forward in
// ops/random/cpu/dropout.cpp, or cuda::dropout_forward) → record. Deliberately not here: the kernels,
// dropout inside fused attention kernels.
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/core/widen.hpp"
#include "ops/ops.hpp"

namespace tg {
using namespace detail;

namespace {
// out and keep (allocated, x's shape and dtype) from x: cpu::dropout_forward (the CPU generator's
// stream, one draw per element), or on CUDA the counter-based (Philox) kernel keyed by one draw
// of the CPU generator: seeded runs repeat exactly, but the mask differs from the CPU's
// Mersenne-twister mask.
void forward_kernel(const Tensor& out, const Tensor& keep, const Tensor& x, double p) {
  if (on_cuda(x)) {
    const uint64_t seed = default_generator().next_u64();
    if (x.numel() > 0)
      kernels("dropout", x.device())
          .dropout_forward(cdt(x.dtype()), out.data_ptr(), keep.data_ptr(), x.data_ptr(), x.numel(),
                           p, seed, 0);
    return;
  }
  dispatch_float(x.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    cpu::dropout_forward<T>(out.data<T>(), keep.data<T>(), x.data<T>(), x.numel(), p,
                            default_generator());
  });
}
}  // namespace

Tensor dropout(const Tensor& x_in, double p, bool training, Site site) {
  SiteScope scope(site);
  const Tensor x = contig(x_in);
  constexpr const char* op = "dropout";
  check_float(x, op, "input", true);
  if (!(p >= 0.0 && p <= 1.0))
    throw Error(fmt::format("{}: probability p must be in [0, 1], got {} (input {})", op, p,
                            shape_str(x.shape())));
  if (!training || p == 0.0) return x;
  // keep: mask·scale, float32 for bfloat16 / float16 (the scale unrounded; the same draws)
  const DType kd = is_reduced(x.dtype()) ? kFloat32 : x.dtype();
  Tensor keep = Tensor::empty(x.shape(), kd, x.device());
  Tensor out = Tensor::empty(x.shape(), kd, x.device());
  forward_kernel(out, keep, widen(x), p);
  if (kd != x.dtype()) out = narrow(out, x.dtype());  // x·mask·scale rounded once
  if (needs_record({&x})) {
    RecordInfo info =
        RecordInfo().flops(static_cast<double>(x.numel()), static_cast<double>(x.numel()));
    Saved sk = info.save(keep);
    record(op, out, {x}, info.differentiable(),  // the same mask again: linear in g
           [sk](const Tensor& g) -> std::vector<Tensor> {
             const Tensor d = mul(g, sk.get());  // bfloat16 / float16 g: in float32, rounded once
             return {d.dtype() == g.dtype() ? d : d.to(g.dtype())};
           });
  }
  return out;
}

}  // namespace tg
