// ops/attention_cuda.hpp — internal to ops/ (not installed): the CUDA half of
// scaled_dot_product_attention (ops/attention_cuda.cpp), which the op's entry point in
// ops/attention.cpp hands a CUDA call to after its checks. Holds declarations only; deliberately
// not here: the kernels (cuda/attention.cu, reached through cuda/kernels.cuh), the CPU path.
#pragma once

#include "ops/attention.hpp"

namespace tg::detail {

// The mask with its tensors (padding, lengths, bool, additive) moved to device d; the structural
// parts are shared.
AttentionMask attention_mask_on(const AttentionMask& mask, Device d);

// q (B, NH, T, hs), k (B, NH, S, hs), v (B, NH, S, hs_v) on one CUDA device, already checked by
// the caller (shapes, dtypes, mask against (B, NH, T, S), dropout_p, scale), scale resolved: the
// fused kernel when it applies, else the composed ops; records its own tape node.
AttentionResult cuda_sdpa(const Tensor& q, const Tensor& k, const Tensor& v,
                          const AttentionMask& mask, const SDPAOptions& opts, double scale);

}  // namespace tg::detail
