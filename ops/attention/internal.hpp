// ops/attention/internal.hpp — internal to ops/attention/ (not installed): what the folder's files
// share. The one lowering of an AttentionMask (kern::MaskDesc, ops/kernel_codes.hpp; the CPU's
// plan and row mask built from it: ops/attention/lowering.cpp), the input checks (checks.cpp), the
// CUDA half (cuda.cpp), the composed path (composed.cpp), create_graph (create_graph.cpp) and the
// row labels both backends' tape nodes give anomaly reports. Deliberately not here: the kernels
// (ops/attention/cpu/fused.hpp, cuda/kernels.cuh), the public API (ops/attention/attention.hpp).
#pragma once

#include "ops/attention/attention.hpp"
#include "ops/attention/cpu/fused.hpp"
#include "ops/kernel_codes.hpp"

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

// ---- the CPU lowering ----
// Each row's structural key range and the row tiles, for T query rows against S keys.
cpu::AttentionPlan make_plan(const AttentionMask& m, int64_t T, int64_t S);

// The mask's data parts for the kernels, and the tensors they point into (with the mask's own
// tensors, which the caller keeps alive).
struct LoweredMask {
  cpu::AttentionRowMask rows;
  Tensor additive64, key_block;  // the additive part as float64; padding and lengths as 0 / -inf
  Tensor rel64, alibi64;         // the position biases as float64
};
LoweredMask lower_mask(const AttentionMask& m, const kern::AttentionLayout& d, DType dt);

// create_graph through the fused CPU attention in O(T·W) memory: the gradients of the node's
// inputs `live` (q, k, v; qkv; or q and kv, with their histories) for dout g, computed by a
// recorded op (scaled_dot_product_attention_backward: the backward as a function of q, k, v and
// dO, P recomputed row by row) whose own backward is the second-order kernel; layouts and grouped
// heads are mapped by recorded views. The mask is structure and constant data parts only (the
// caller takes the composed path for a differentiable mask or bias). With dropout, keep is the
// forward's keep tiles (the same masks again), undefined otherwise.
std::vector<Tensor> sdpa_grad_rows(const kern::AttentionLayout& d, const std::vector<Tensor>& live,
                                   const AttentionMask& mask, double scale, const Tensor& keep,
                                   double p, const Tensor& g);

// ---- the CUDA half, the composed path, create_graph ----
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
