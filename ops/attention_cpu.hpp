// ops/attention_cpu.hpp — internal to ops/ (not installed): the CPU attention's lowering of an
// AttentionMask (the plan's key ranges and row tiles, the row mask's data parts), defined in
// ops/attention.cpp, and the recorded backward of create_graph built on it
// (ops/attention_grad.cpp). Deliberately not here: the kernels (ops/cpu/attention.hpp).
#pragma once

#include "ops/attention.hpp"
#include "ops/cpu/attention.hpp"

#include <vector>

namespace tg::detail {

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

}  // namespace tg::detail
