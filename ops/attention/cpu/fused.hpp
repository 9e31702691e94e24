// ops/attention/cpu/fused.hpp — the fused CPU attention as a kernel pair, cpu::attention_forward
// and cpu::attention_backward (ops/attention/cpu/fused.cpp), twins of
// cuda::attention_forward/backward: raw pointers and plain descriptions, no Tensor, no tape; and
// the create_graph pair (ops/attention/cpu/grad2.cpp). ops/attention/sdpa.cpp checks the inputs,
// lowers the AttentionMask (ops/attention/lowering.cpp) into an AttentionPlan (each row's
// structural key range, the row tiles) and an AttentionRowMask (the data parts), calls these and
// records the node. Internal to ops/attention/.
#pragma once

#include "ops/kern/kernel_codes.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tg::cpu {

// Query rows per tile when the mask has structure, and without it (every tile then spans all S
// keys: bigger tiles mean fewer, larger products).
constexpr int64_t kAttentionRowTile = 64;
constexpr int64_t kAttentionRowTileFull = 256;

// The operands' layout, shared with the CUDA kernels: kern::AttentionLayout
// (ops/kern/kernel_codes.hpp).
using AttentionDims = kern::AttentionLayout;

// The structure of the mask, the same for every (b, h): row tiles and their key ranges.
struct AttentionTile {
  int64_t r0, r1, klo, khi;
  int64_t off;  // element offset of this tile's P block inside one (b, h)
  int64_t rows() const { return r1 - r0; }
  int64_t width() const { return khi >= klo ? khi - klo + 1 : 0; }
};
struct AttentionPlan {
  std::vector<AttentionTile> tiles;
  std::vector<int64_t> lo, hi;   // each row's structural key range (empty when lo > hi)
  int64_t per_bh = 0;            // P elements per (b, h)
  int64_t max_tile = 0;          // the largest rows·width
  bool first_spans_all = false;  // tile 0 covers every key: it writes dK, dV (beta = 0)
};

// The data parts of the mask, read per row; each null when absent.
struct AttentionRowMask {
  const bool* key_allowed = nullptr;  // (B, S)
  const int64_t* lengths = nullptr;   // (B)
  const bool* allowed = nullptr;      // broadcast to (B, NH, T, S) through allowed_st
  const double* additive = nullptr;   // broadcast to (B, NH, T, S) through additive_st
  int64_t allowed_st[4] = {}, additive_st[4] = {};
  // Padding and lengths together, in q's dtype: (B, S), 0 where the key is allowed, -inf where
  // not. Set when they are the only data parts (the common case: a vectorised select per row).
  const void* key_block = nullptr;
  // Position biases (AttentionMask::relative_bias, alibi), per key: rel (NH or 1, rel_n) float64,
  // bias rel[h·rel_hs + bucket(j - i')]; alibi (NH) float64, bias -alibi[h]·|i' - j|; i' = i +
  // shift.
  const double* rel = nullptr;
  int64_t rel_hs = 0, rel_n = 0, rel_max_distance = 128;
  bool rel_bidirectional = true;
  const double* alibi = nullptr;
  int64_t shift = 0;
};

// What forward and backward share.
struct AttentionCall {
  AttentionDims d;
  const AttentionPlan* plan = nullptr;
  const AttentionRowMask* mask = nullptr;
  double scale = 1, p = 0;  // p: the dropout probability, when dropout
  bool dropout = false;
  bool errors_on_fully_masked = false;  // else such a row gives output 0
  // The operands are bfloat16 values (widened): the packed products round their operands, P and
  // dS too, to bfloat16 and run on AVX512-BF16 dot products (ops/attention/cpu/bf16.hpp); the
  // softmax, the row sums and dS = P ⊙ (dP − rowsum) stay float32. Set by sdpa.cpp's
  // reduced_sdpa for bfloat16 only, where cpu::attention_bf16_dot(widest tile) says so.
  bool bf16_products = false;
  std::string mask_name;  // for that error
  // The P tiles (B·NH·per_bh elements, tile blocks) and dropout's keep mask: kept for the
  // backward when set, scratch otherwise (forward), read by the backward.
  void* P = nullptr;
  void* keep = nullptr;
};

// Dense (B, NH, T, S) outputs, each null unless asked for: the weights (P after dropout), and for
// the probe the scores (pre-filled with -inf: S where allowed), P before dropout, dP (0 where
// blocked) and dS.
template <typename T>
struct AttentionDense {
  T *weights = nullptr, *scores = nullptr, *probs = nullptr;
  T *dprobs = nullptr, *dscores = nullptr;
  // The position biases' gradients, accumulated per (b, h): d_rel (B, NH, rel_n) and d_alibi
  // (B, NH), float64, zeroed by the caller; null unless asked for.
  double *d_rel = nullptr, *d_alibi = nullptr;
};

// o (the output's layout) = softmax(scale·q·kᵀ masked)·v, P tiles into call.P when set; dropout
// draws from the default generator in order. Throws tg::Error for a fully masked row when the
// mask says so.
template <typename T>
void attention_forward(const AttentionCall& call, T* o, const T* q, const T* k, const T* v,
                       const AttentionDense<T>& dense);
// dq, dk, dv (each in its operand's layout; one tensor when packed) from g (dO) and the saved
// P (and keep) tiles. Every element of dq, dk and dv is written.
template <typename T>
void attention_backward(const AttentionCall& call, T* dq, T* dk, T* dv, const T* g, const T* q,
                        const T* k, const T* v, const AttentionDense<T>& dense);

// create_graph (ops/attention/cpu/grad2.cpp): the backward as a function of (q, k, v, dO), P
// recomputed row by row (call.P unused), and that function's backward for the cotangents gq, gk,
// gv of dq, dk, dv. Every operand in the canonical layout (B, NH, T|S, hs) contiguous, as many
// key/value heads as query heads; call.mask without key_block; with call.dropout, call.keep is
// the forward's keep tiles (call.plan's layout). Every element of the outputs is written.
template <typename T>
void attention_grad_rows(const AttentionCall& call, const T* q, const T* k, const T* v, const T* dO,
                         T* dq, T* dk, T* dv);
template <typename T>
void attention_grad2_rows(const AttentionCall& call, const T* q, const T* k, const T* v,
                          const T* dO, const T* gq, const T* gk, const T* gv, T* q2, T* k2, T* v2,
                          T* dO2);

}  // namespace tg::cpu
