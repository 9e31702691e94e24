// ops/attention/internal.hpp — internal to ops/attention/ (not installed): what the folder's files
// share. The one lowering of an AttentionMask (kern::MaskDesc, ops/kern/kernel_codes.hpp; the CPU's
// plan and row mask built from it: ops/attention/lowering.cpp), the input checks (checks.cpp), the
// CUDA half (cuda.cpp), the composed path (composed.cpp), create_graph (create_graph.cpp) and the
// row labels both backends' tape nodes give anomaly reports. Deliberately not here: the kernels
// (ops/attention/cpu/fused.hpp, cuda/kernels.cuh), the public API (ops/attention/attention.hpp).
#pragma once

#include "ops/attention/attention.hpp"
#include "ops/attention/cpu/fused.hpp"
#include "autograd/tape.hpp"
#include "ops/kern/kernel_codes.hpp"

#include <functional>
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
// slopes' dtype and device. Both backends' nodes use it.
void append_bias_grads(std::vector<Tensor>& out, const AttentionMask& m, const Tensor& d_rel,
                       const Tensor& d_alibi);

// ---- the input checks (checks.cpp) ----
// What a form's checks give sdpa(): the layout, and the inputs named with their shapes for errors.
struct SdpaChecked {
  kern::AttentionLayout d;
  std::string shapes;
};
// q, k, v of scaled_dot_product_attention; qkv of the packed form (opts.heads_last implied); q and
// kv of the kv-packed form. Dtypes, devices and every shape, the key/value head count (equal, or
// with enable_gqa a divisor of NH).
SdpaChecked check_sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const SDPAOptions& opts);
SdpaChecked check_packed(const Tensor& qkv, const SDPAOptions& opts);
SdpaChecked check_kv_packed(const Tensor& q, const Tensor& kv, const SDPAOptions& opts);
// What every form shares, run by sdpa(): dropout_p, scale and the mask against (B, NH, T, S); on
// a CUDA device also q, k, v on one device and an additive mask in q's dtype.
void check_options(const kern::AttentionLayout& d, const Tensor& q, const Tensor& k,
                   const Tensor& v, const AttentionMask& mask, const SDPAOptions& opts,
                   const std::string& shapes);

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

// ---- the CPU's plan and row mask, the CUDA kernels' bias tables (lowering.cpp) ----
// Each row's structural key range and the row tiles, for T query rows against S keys.
cpu::AttentionPlan make_plan(const AttentionMask& m, int64_t T, int64_t S);

// The mask's data parts for the CPU kernels, and the tensors they point into (with the mask's own
// tensors, which the caller keeps alive).
struct LoweredMask {
  cpu::AttentionRowMask rows;
  Tensor additive64, key_block;  // the additive part as float64; padding and lengths as 0 / -inf
  Tensor rel64, alibi64;         // the position biases as float64
};
LoweredMask lower_mask(const AttentionMask& m, const kern::AttentionLayout& d, DType dt);

// The position biases on device dev for the fused CUDA kernels (MaskDesc::rel, alibi, diag_lo,
// set in desc): the table and the slopes in float64, and each diagonal's bucket.
struct BiasTables {
  Tensor rel, bucket, alibi;
};
BiasTables bias_tables(const AttentionMask& m, const kern::AttentionLayout& d, Device dev,
                       kern::MaskDesc& desc);

// ---- one call of the op (sdpa.cpp) ----
// What sdpa() resolved once for a call, read by both backends and by create_graph.
struct SdpaCall {
  kern::AttentionLayout d;
  AttentionMask mask;  // with SDPAOptions::is_causal folded in
  SDPAOptions opts;
  double scale = 1;
  bool dropout = false;  // training and dropout_p > 0
  // The mask's tensors that require grad (grad mode on): each one more input of the tape node,
  // after q, k, v (or qkv, or q and kv): the additive part, the table, the slopes.
  bool mask_grad = false, rel_grad = false, alibi_grad = false;
  bool record = false;  // a tape node is wanted: an input or one of those requires grad
  // The operands are float32 copies of bfloat16 / float16 ones (sdpa.cpp's reduced_sdpa): the
  // backend's output is rounded before it becomes the node's, so a backward that reads it saves it
  // as an intermediate, not as the node's output.
  bool widened = false;
  // Those copies hold bfloat16 values: the CPU's products may run in bfloat16
  // (cpu::AttentionCall::bf16_products).
  bool bf16 = false;
};

// A backend's forward: the result and, for the tape node sdpa() records, its cost and saved
// tensors and the raw first-order backward (empty when no node is wanted, or when the composed
// path ran, whose ops recorded themselves).
struct SdpaForward {
  AttentionResult res;
  RecordInfo info;
  std::function<std::vector<Tensor>(const Tensor& g)> backward;
  Tensor keep;  // the CPU's dropout keep tiles: create_graph draws the same masks again
};
SdpaForward cpu_sdpa(const SdpaCall& c, const Tensor& q, const Tensor& k, const Tensor& v);
SdpaForward cuda_sdpa(const SdpaCall& c, const Tensor& q, const Tensor& k, const Tensor& v);

// ---- the composed path (composed.cpp) ----
// q, k, v (or k, v) as (B, NH or NKV, T|S, hs) views of the operands laid out as d says
// (recorded, so gradients reach packed or heads-last inputs).
std::vector<Tensor> heads_first(const kern::AttentionLayout& d, const Tensor& q, const Tensor& k,
                                const Tensor& v);
// Attention as recorded ops on any device (QKᵀ·scale, the additive term `add`, the dense mask
// from host_mask, softmax, dropout, P·V; O(T·S) memory), so the tape differentiates it: q, k, v
// are (B, NH, T|S, hs) views, the output (B, NH, T, hs_v). The CUDA path's fallback and
// create_graph's for differentiable masks and biases.
AttentionResult composed_sdpa(const Tensor& q, const Tensor& k, const Tensor& v,
                              const AttentionMask& host_mask, const Tensor& add,
                              const SDPAOptions& opts, double scale);
// The additive term of the composed path: `additive` (the mask's additive part, on either device)
// plus m's position biases made dense by recorded ops on dev (differentiable w.r.t. the table
// and the slopes); undefined when there is neither.
Tensor composed_additive(const kern::AttentionLayout& d, const AttentionMask& m,
                         const Tensor& additive, Device dev);

// ---- create_graph (create_graph.cpp) ----
// The node's input gradients for dout g as recorded ops, so they differentiate again; q, k, v
// the node's inputs with their histories (its Saved handles; k and v undefined where packed into
// q; the mask's differentiable tensors, also inputs, come from c.mask), keep the CPU's dropout
// tiles. Without a differentiable mask or bias, the CPU computes them in O(T·W) memory by one
// recorded op (scaled_dot_product_attention_backward, P recomputed row by row; its own backward the
// second-order kernel, ops/attention/cpu/grad2.cpp); otherwise, and on CUDA, by the composed path
// (O(T·S)), refusing dropout (it would draw another mask). Undefined for an input that needs no
// gradient.
std::vector<Tensor> sdpa_create_graph(const SdpaCall& c, const Tensor& q, const Tensor& k,
                                      const Tensor& v, const Tensor& keep, const Tensor& g);

}  // namespace tg::detail
