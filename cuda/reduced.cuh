// cuda/reduced.cuh — the row kernels (reductions, softmax, norms, cross-entropy, rotary, the Adam
// step) on bfloat16 / float16 operands: their float32 kernel on float32 device copies, each
// operand widened once by cast() and each output rounded once back by cast() (cuda/half.cuh's
// conversions), so every formula stays written once and the result is the float32 kernel's,
// rounded once — what the CPU's reduced path (ops/core/cpu/reduced.hpp) computes. It costs one
// extra read and write of each operand in float32; fusing the conversion into each kernel's loads
// is left for when a GPU can measure it (docs/cuda.md). For .cu files only. Deliberately not here:
// elementwise kernels (they load and store the reduced type themselves: elementwise.cu, copy.cu).
#pragma once

#include "cuda/check.cuh"

#include <cstdint>

namespace tg::cuda::detail {

inline bool is_reduced(DT dt) { return dt == DT::BF16 || dt == DT::F16; }

// A float32 device buffer of n elements: an input's widened copy (In), or an output computed in
// float32 and rounded into its reduced-type destination by store() (Out, In for in-place
// operands). A null pointer stays null (an optional operand).
class F32Scratch {
 public:
  // An input: n elements of dt at src, widened (null src: no buffer, get() is null).
  F32Scratch(DT dt, const void* src, int64_t n) : buf_(src ? size_t(n) * 4 : 0), n_(n) {
    if (src && n > 0) cast(dt, DT::F32, buf_.as<void>(), src, n);
  }
  // An output of n elements (when want, else none: get() is null).
  explicit F32Scratch(int64_t n, bool want = true) : buf_(want ? size_t(n) * 4 : 0), n_(n) {}
  float* get() const { return buf_.as<float>(); }
  // The float32 values rounded once into dst (dt); nothing when dst is null.
  void store(DT dt, void* dst) const {
    if (dst && n_ > 0) cast(DT::F32, dt, dst, buf_.as<void>(), n_);
  }

 private:
  DeviceBuffer buf_;
  int64_t n_;
};

}  // namespace tg::cuda::detail
