// ops/attention_cuda.hpp — internal to ops/ (not installed): the CUDA half of
// scaled_dot_product_attention (ops/attention_cuda.cpp), which the op's entry point in
// ops/attention.cpp hands a CUDA call to after its checks. Holds declarations only; deliberately
// not here: the kernels (cuda/attention.cu, reached through cuda/kernels.cuh), the CPU path.
#pragma once

#include "ops/kern/kernel_codes.hpp"
#include "ops/attention.hpp"

#include <vector>

namespace tg::detail {

// The mask with its tensors (padding, lengths, bool, additive) moved to device d; the structural
// parts are shared.
AttentionMask attention_mask_on(const AttentionMask& mask, Device d);

// q, k, v contiguous on one CUDA device in the layout d describes (the CPU's: heads first, heads
// last, packed qkv, or q with packed kv; q, k and v then point at the packed tensors), already
// checked by the caller (shapes, dtypes, mask against (B, NH, T, S), dropout_p, scale), scale
// resolved; `inputs` are the tensors the tape node differentiates ({q, k, v}, {qkv} or {q, kv}).
// The fused kernels read every layout in place; otherwise the composed ops run on views. Records
// its own tape node.
AttentionResult cuda_sdpa(const kern::AttentionLayout& d, const Tensor& q, const Tensor& k,
                          const Tensor& v, const std::vector<Tensor>& inputs,
                          const AttentionMask& mask, const SDPAOptions& opts, double scale);

// q, k, v (or k, v) as (B, NH or NKV, T|S, hs) views of the operands laid out as d says
// (recorded, so gradients reach packed or heads-last inputs).
std::vector<Tensor> heads_first(const kern::AttentionLayout& d, const Tensor& q, const Tensor& k,
                                const Tensor& v);

// create_graph helpers: attention_slots gives each input that requires grad a node of its own
// (identity backward), so a walk can stop there per input slot; slot_grads sends grads from roots
// back to those slots (detail::grad_stop_at_inputs, recorded): one gradient per slot, zeros where
// none arrives, undefined for a slot that needs none.
std::vector<Tensor> attention_slots(const std::vector<Tensor>& live);
std::vector<Tensor> slot_grads(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
                               const std::vector<Tensor>& slots);

// create_graph through scaled_dot_product_attention, either device: the gradients of the tape
// node's inputs for dout g, `live` being those inputs with their histories (saved_input): q, k, v
// (or qkv, or q and kv), then the additive mask, the relative-position table and the ALiBi slopes
// where they are inputs (mask_grad, rel_grad, alibi_grad). Computed through the composed path
// (QKᵀ·scale, the dense mask and biases, softmax, P·V as recorded ops; O(T·S) memory), so they
// differentiate again; undefined for an input that needs no gradient. Dropout is refused by the
// caller (the composed path would draw another mask).
std::vector<Tensor> sdpa_grad_recorded(const kern::AttentionLayout& d,
                                       const std::vector<Tensor>& live, const AttentionMask& mask,
                                       bool mask_grad, bool rel_grad, bool alibi_grad, double scale,
                                       const Tensor& g);

}  // namespace tg::detail
