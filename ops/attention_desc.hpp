// ops/attention_desc.hpp — internal to ops/ (not part of the API): the one lowering of an
// AttentionMask to the kernels' description kern::MaskDesc (ops/kernel_codes.hpp), shared by the
// CPU path (ops/attention.cpp: the plan's key ranges, the row mask) and the CUDA path
// (ops/attention_cuda.cpp: the fused kernels), defined in ops/attention_mask.cpp; and the row
// labels both backends' tape nodes give anomaly reports.
#pragma once

#include "ops/kern/kernel_codes.hpp"
#include "ops/attention.hpp"

#include <string>
#include <vector>

namespace tg::detail {

// A MaskDesc and the host memory of its blocked parts past kern::kMaxBlocked (desc.more_blocked
// points into `more`). Moves keep that pointer valid; copies are refused.
struct MaskLowering {
  kern::MaskDesc desc;
  std::vector<int64_t> more;
  MaskLowering() = default;
  MaskLowering(MaskLowering&&) = default;
  MaskLowering& operator=(MaskLowering&&) = default;
  MaskLowering(const MaskLowering&) = delete;
  MaskLowering& operator=(const MaskLowering&) = delete;
};

// The structural parts of m for T query rows against S keys (what key_range reads).
MaskLowering mask_structure(const AttentionMask& m, int64_t T, int64_t S);
// The structure and the data parts: pointers into m's tensors (on whichever device they live; the
// caller keeps m alive), with strides broadcast to (B, NH, T, S).
MaskLowering mask_desc(const AttentionMask& m, int64_t B, int64_t NH, int64_t T, int64_t S);

// The position biases' gradients from the fused kernels' sums per (b, h) in float64 (d_rel
// (B, NH, buckets), d_alibi (B, NH); each undefined when not asked for), appended to out: summed
// over the batch (and over the heads for a shared (1, buckets) table), in the table's and the
// slopes' dtype and device. Both backends' nodes use it (ops/attention_mask.cpp).
void append_bias_grads(std::vector<Tensor>& out, const AttentionMask& m, const Tensor& d_rel,
                       const Tensor& d_alibi);

// The input checks (ops/attention_checks.cpp): options and mask against the dims (`shapes`
// names the inputs in errors); the key/value head count against NH (equal, or with enable_gqa a
// divisor: returns NKV, 0 when equal); q, k, v of scaled_dot_product_attention, returning the
// layout.
void check_options(const kern::AttentionLayout& d, const AttentionMask& mask,
                   const SDPAOptions& opts, const std::string& shapes, Device dev);
int64_t check_heads(int64_t NH, int64_t NKV, const SDPAOptions& opts, const std::string& shapes,
                    bool heads_last);
kern::AttentionLayout check_sdpa(const Tensor& q, const Tensor& k, const Tensor& v,
                                 const AttentionMask& mask, const SDPAOptions& opts);

// The row labels of the tape node's output and input gradients for anomaly reports (RecordInfo's
// rows): (b, h, t), or (b, t, h) with heads last (packed: the output's only; d(qkv) falls back to
// indices). Both backends' nodes use it.
inline const char* attention_rows(const kern::AttentionLayout& d) {
  using L = kern::AttentionLayout;
  return d.packing == L::kQKV  ? "b,t,h"
         : d.packing == L::kKV ? "b,t,h|b,t,h"
         : d.heads_last        ? "b,t,h|b,t,h|b,s,h|b,s,h"
                               : "b,h,t|b,h,t|b,h,s|b,h,s";
}

}  // namespace tg::detail
