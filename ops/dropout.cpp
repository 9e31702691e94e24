// ops/dropout.cpp — inverted dropout, forward and backward side by side.
//
// Training: each element is kept with probability 1-p (one uniform draw per element, in row-major
// order, from tg::default_generator(), so tg::manual_seed(s) fixes the mask) and kept elements are
// scaled by 1/(1-p). Saved for backward: keep = mask·scale, the same shape and dtype as x;
// dx = dout·keep. Eval mode or p == 0 returns x itself (no copy, no node); p == 1 gives zeros and
// a zero gradient without drawing. Deliberately not here: dropout inside fused attention kernels.
#include "ops/cuda_dispatch.hpp"
#include "ops/detail.hpp"
#include "ops/ops.hpp"

#include <algorithm>
#include <cmath>

namespace tg {
using namespace detail;

Tensor dropout(const Tensor& x, double p, bool training, Site site) {
  SiteScope scope(site);
  constexpr const char* op = "dropout";
  check_float(x, op, "input", true);
  if (!(p >= 0.0 && p <= 1.0))
    throw Error(fmt::format("{}: probability p must be in [0, 1], got {} (input {})", op, p,
                            shape_str(x.shape())));
  if (!training || p == 0.0) return x;
  Tensor keep = Tensor::empty(x.shape(), x.dtype(), x.device());  // keep: mask·scale
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (on_cuda(x)) {
    // Counter-based (Philox) on the GPU, keyed by one draw of the CPU generator: seeded runs
    // repeat exactly, but the mask differs from the CPU's Mersenne-twister mask.
    const uint64_t seed = default_generator().next_u64();
    if (x.numel() > 0)
      on_device(op, x.device(), [&] {
        cuda::dropout_forward(cdt(x.dtype()), out.data_ptr(), keep.data_ptr(), x.data_ptr(),
                              x.numel(), p, seed, 0);
      });
  }
  if (!on_cuda(x))
    dispatch_float(x.dtype(), op, [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.data<T>();
      T* pk = keep.data<T>();
      T* po = out.data<T>();
      const int64_t n = x.numel();
      if (p == 1.0) {
        for (int64_t i = 0; i < n; ++i) pk[i] = po[i] = T(0);
        return;
      }
      const T scale = static_cast<T>(1.0 / (1.0 - p));
      Generator& gen = default_generator();
      // Keep iff uniform() >= p, with uniform() = (u >> 11)·2⁻⁵³: the same test on the integer,
      // (u >> 11) >= ceil(p·2⁵³) (exact: p·2⁵³ only scales the exponent), drawn in blocks.
      const uint64_t threshold = static_cast<uint64_t>(std::ceil(std::ldexp(p, 53)));
      constexpr int64_t kBlock = 1024;
      uint64_t u[kBlock];
      for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
        const int64_t m = std::min(kBlock, n - i0);
        gen.next_u64s(u, m);
        for (int64_t j = 0; j < m; ++j) {
          const T k = (u[j] >> 11) >= threshold ? scale : T(0);
          pk[i0 + j] = k;
          po[i0 + j] = px[i0 + j] * k;
        }
      }
    });
  if (needs_record({&x})) {
    record(op, out, {x},
           RecordInfo()
               .flops(static_cast<double>(x.numel()), static_cast<double>(x.numel()))
               .saved(keep),
           [keep](const Tensor& g) -> std::vector<Tensor> { return {mul(g, keep)}; });
  }
  return out;
}

}  // namespace tg
