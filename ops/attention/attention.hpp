// ops/attention/attention.hpp — one mask description for every attention path, and functional
// attention.
//
// AttentionMask says which keys each query may attend. Its parts combine by intersection:
//   structural (no tensors): causal, local window (left, right), blocked window; each gives, for
//     query row i, one contiguous inclusive range of keys [lo, hi], so their intersection is one
//     range too. Fast paths compute only that range: O(T·W), never T×S.
//   data: key padding ((B, S) bool or (B) lengths), explicit bool (T, S) / (B, NH, T, S)
//     (broadcastable), additive float masks (added to the scores; -inf blocks).
// Conventions (see docs/attention.md): positions are query i in [0, T), key j in [0, S).
//   causal top-left (PyTorch is_causal): j <= i.  bottom-right (FlashAttention, KV cache):
//   j <= i + (S - T). Local (left, right): i' - left <= j <= i' + right, with i' = i (top-left)
//   or i + (S - T) (bottom-right). Blocked(W): floor(i'/W) - look_back <= floor(j/W) <=
//   floor(i'/W) + look_ahead, optionally causal inside (j <= i').
// A bool tensor always states its polarity (MaskPolarity): nothing guesses.
// Rows with no allowed key give output 0 and zero gradient, or an error when
// error_on_fully_masked(true) is set (naming batch, head and row).
#pragma once

#include "autograd/tensor.hpp"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tg {

enum class MaskPolarity {
  TrueAllowed,  // PyTorch F.scaled_dot_product_attention: True takes part
  TrueBlocked,  // PyTorch nn.MultiheadAttention / nn.Transformer: True is not allowed
};
enum class CausalAlign { TopLeft, BottomRight };

struct BlockedOptions {
  int64_t look_back = 0;   // also see this many previous blocks
  int64_t look_ahead = 0;  // and this many following blocks
  bool causal = false;     // and only keys j <= i' inside the visible blocks
};

class AttentionMask {
 public:
  AttentionMask() = default;  // no mask: every key is allowed

  // ---- structural parts ----
  // Keys j <= i (top-left, PyTorch's is_causal) or j <= i + (S - T) (bottom-right).
  static AttentionMask causal(CausalAlign align = CausalAlign::TopLeft);
  // Sliding window, inclusive offsets: i' - left <= j <= i' + right. Causal local: right = 0.
  static AttentionMask local(int64_t left, int64_t right, CausalAlign align = CausalAlign::TopLeft);
  // The one family of window names: sliding_window(keys) counts the keys of an interior row, so
  // no convention hides an off-by-one. Causal: the query and the keys - 1 before it, (keys - 1,
  // 0). Centered: the query and (keys - 1)/2 on each side (keys odd). docs/attention.md shows
  // describe() of each, and how other libraries' window sizes map onto it.
  enum class Window { Causal, Centered };
  static AttentionMask sliding_window(int64_t keys, Window kind = Window::Causal,
                                      CausalAlign align = CausalAlign::TopLeft);
  // Other libraries' names, each one sliding_window:
  // Longformer / the seed's LocalMultiheadAttention(window_size w): |i - j| <= w/2 =
  // sliding_window(w + 1, Centered) (w even).
  static AttentionMask longformer(int64_t w);
  // Mistral's sliding window W: i - W <= j <= i = sliding_window(W + 1).
  static AttentionMask mistral(int64_t W);
  // Hugging Face sliding_window W: i - W < j <= i = sliding_window(W).
  static AttentionMask hf_sliding_window(int64_t W);
  // Non-overlapping blocks of W positions from position 0 (the last may be shorter).
  static AttentionMask blocked(int64_t W, BlockedOptions opts = {},
                               CausalAlign align = CausalAlign::TopLeft);

  // ---- data parts ----
  // (B, S) bool key padding mask with its polarity (PyTorch's key_padding_mask: TrueBlocked).
  static AttentionMask key_padding(const Tensor& mask, MaskPolarity polarity);
  // (B) int64 valid lengths: keys j < lengths[b] are allowed.
  static AttentionMask key_lengths(const Tensor& lengths);
  // Bool mask broadcastable to (B, NH, T, S): (T, S), (1|B, 1|NH, T, S), ...
  static AttentionMask from_bool(const Tensor& mask, MaskPolarity polarity);
  // The seed article's attention(Q, K, V, mask): mask == 0 is blocked (any dtype).
  static AttentionMask from_seed(const Tensor& mask);
  // Float mask broadcastable to (B, NH, T, S), added to the scores; -inf blocks. A mask that
  // requires grad is differentiable (PyTorch's attn_mask): its gradient is dScores summed to its
  // shape (0 where the key is blocked or the row fully masked), on the CPU's fused path and on
  // CUDA's composed one.
  static AttentionMask additive(const Tensor& mask);
  // Position biases added to the scores, computed per key in the fused kernels, CPU and CUDA
  // (never a dense T×S tensor: O(T·W) with structured masks) and differentiable (the gradient is
  // dScores summed per bucket, or per head times the distance). Positions are i' (the query,
  // shifted S - T when the mask is aligned bottom-right) and j (the key). A learned
  // relative-position bias, T5's (Raffel et al. 2020; Hugging Face's _relative_position_bucket):
  // table (NH or 1, buckets) float, bias table[h, bucket(j - i')] with half the buckets exact
  // distances and the rest logarithmic up to max_distance; bidirectional false: only the past (j <=
  // i') gets distinct buckets.
  static AttentionMask relative_bias(const Tensor& table, bool bidirectional = true,
                                     int64_t max_distance = 128);
  // ALiBi (Press et al. 2022): slopes (NH) float, bias -slopes[h]·|i' - j| (= slope·(j - i') for
  // the causal keys). alibi_slopes(NH): the paper's geometric sequence 2^(-8k/NH), k = 1..NH
  // (for NH not a power of two, its interleaved extension); a floating dtype and NH in [1, 2^16],
  // else a tg::Error naming the argument.
  static AttentionMask alibi(const Tensor& slopes);
  static Tensor alibi_slopes(int64_t num_heads, DType dtype = kFloat32);

  // Intersection: a key is allowed iff both allow it; additive parts add.
  AttentionMask operator&(const AttentionMask& other) const;
  // Raise tg::Error naming batch, head and row when a row has no allowed key.
  AttentionMask& error_on_fully_masked(bool on = true);
  bool errors_on_fully_masked() const { return error_on_empty_; }

  // ---- queries ----
  bool is_none() const;        // nothing masked
  bool has_structure() const;  // causal / local / blocked present
  bool has_data() const;       // padding / bool / additive tensors present
  // The structural key range [lo, hi] (inclusive; empty when lo > hi) of query row i.
  std::pair<int64_t, int64_t> key_range(int64_t i, int64_t T, int64_t S) const;
  // Checks every tensor part against (B, NH, T, S); throws naming `op`, the part and shapes.
  void check(const char* op, int64_t B, int64_t NH, int64_t T, int64_t S) const;
  // Is key j allowed for (b, h, i)? (structure, padding and bool parts; an additive -inf counts
  // as blocked). The slow reference every fast path is tested against.
  bool allowed(int64_t b, int64_t h, int64_t i, int64_t j, int64_t T, int64_t S) const;
  // Additive term for (b, h, i, j): 0 unless an additive part is present.
  double additive_at(int64_t b, int64_t h, int64_t i, int64_t j, int64_t T, int64_t S) const;
  // (B, NH, T, S) bool, True = allowed: the whole mask made dense (tests, the dense path).
  Tensor dense_allowed(int64_t B, int64_t NH, int64_t T, int64_t S) const;
  // Keys allowed per query row, for batch b and head h.
  std::vector<int64_t> keys_per_row(int64_t T, int64_t S = -1, int64_t b = 0, int64_t h = 0) const;
  // A picture of the allowed keys ('#' allowed, '.' blocked) with keys per row, for batch 0,
  // head 0 and a small T (and S; S = -1 means S = T).
  std::string describe(int64_t T, int64_t S = -1) const;
  std::string name() const;  // e.g. "causal & local(2,0) & key_padding(2,5)"

  // ---- the parts, read by the lowering (ops/attention/lowering.cpp), nn/ and tests ----
  struct Local {
    int64_t left, right;
  };
  struct Blocked {
    int64_t W;
    BlockedOptions opts;
  };
  bool has_causal() const { return causal_; }
  CausalAlign align() const { return align_; }  // shared by causal, local and blocked parts
  const std::vector<Local>& local_parts() const { return local_; }
  const std::vector<Blocked>& blocked_parts() const { return blocked_; }
  const Tensor& padding_part() const { return key_allowed_; }  // (B, S) bool, True = allowed
  const Tensor& lengths_part() const { return key_lengths_; }  // (B) int64: keys j < length
  const Tensor& bool_part() const { return allowed_; }         // bool broadcastable, True = allowed
  const Tensor& additive_part() const { return additive_; }    // float broadcastable
  const Tensor& rel_table() const { return rel_table_; }       // (NH or 1, buckets) float
  bool rel_bidirectional() const { return rel_bidirectional_; }
  int64_t rel_max_distance() const { return rel_max_distance_; }
  const Tensor& slopes() const { return alibi_slopes_; }  // (NH) float: ALiBi

  // ---- copies with one thing changed ----
  // Every structural part aligned `a` (a KV cache's queries are the last T of S positions).
  AttentionMask aligned(CausalAlign a) const;
  // The data tensors (padding, lengths, bool, additive) on device d; the biases stay.
  AttentionMask on(Device d) const;
  // The additive part, the relative-position table or the ALiBi slopes replaced by t (the same
  // shape: another dtype or device, or the same values reattached, as create_graph does).
  AttentionMask with_additive(const Tensor& t) const;
  AttentionMask with_rel_table(const Tensor& t) const;
  AttentionMask with_slopes(const Tensor& t) const;

  // The position biases for (NH, T, S), as recorded ops (differentiable): what the fused kernel
  // adds per key, made dense (tests, the CUDA composed path). Undefined when there is none.
  Tensor dense_bias(int64_t NH, int64_t T, int64_t S) const;
  // T5's bucket of relative position rel = j - i' (Hugging Face's arithmetic, float32 log).
  static int64_t t5_bucket(int64_t rel, bool bidirectional, int64_t buckets, int64_t max_distance);

 private:
  bool causal_ = false;
  CausalAlign align_ = CausalAlign::TopLeft;
  std::vector<Local> local_;
  std::vector<Blocked> blocked_;
  Tensor key_allowed_;  // (B, S) bool, True = allowed (key padding)
  Tensor key_lengths_;  // (B) int64: keys j < length allowed
  Tensor allowed_;      // bool broadcastable to (B, NH, T, S), True = allowed
  Tensor additive_;     // float broadcastable to (B, NH, T, S)
  Tensor rel_table_;    // (NH or 1, buckets) float: the relative-position bias
  bool rel_bidirectional_ = true;
  int64_t rel_max_distance_ = 128;
  Tensor alibi_slopes_;  // (NH) float
  bool error_on_empty_ = false;
};

// ---- functional attention ----

// Opt-in introspection for studying backprop: per call, receives the scores S = scale·QKᵀ + mask
// and the probabilities P (forward), then dP and dS = P ⊙ (dP − rowsum(dP ⊙ P)) (backward), each
// (B, NH, T, S) with blocked entries S = -inf, P = dP = dS = 0. Costs a dense T×S copy: off
// unless set.
struct AttentionProbe {
  std::function<void(const Tensor& scores, const Tensor& probs)> on_forward;
  std::function<void(const Tensor& dprobs, const Tensor& dscores)> on_backward;
};

struct SDPAOptions {
  double dropout_p = 0.0;
  bool training = true;         // dropout only when training
  std::optional<double> scale;  // default 1/sqrt(hs)
  bool need_weights = false;    // also return P (B, NH, T, S), after dropout
  const AttentionProbe* probe = nullptr;
  // Layout of q, k, v and the output: false, (B, NH, T, hs) as PyTorch's SDPA; true, heads last,
  // (B, T, NH, hs) as FlashAttention: what a (B, T, NH·hs) projection is, reshaped, without a
  // head-split copy (the CPU kernel reads the rows in place). Weights and the probe stay
  // (B, NH, T, S).
  bool heads_last = false;
  // PyTorch's is_causal: the mask intersected with AttentionMask::causal() (top-left; a mask that
  // is already bottom-right aligned is refused, naming both).
  bool is_causal = false;
  // PyTorch's enable_gqa (grouped- and multi-query attention): k and v may have NKV heads, NH a
  // multiple of NKV; query head h reads key/value head h / (NH / NKV) (repeat_interleave order) in
  // place, never repeated, and dK, dV sum over each group. Every layout but packed qkv.
  bool enable_gqa = false;
};

struct AttentionResult {
  Tensor output;   // (B, NH, T, hs_v)
  Tensor weights;  // (B, NH, T, S) when need_weights, else undefined
};

// q (B, NH, T, hs), k (B, NH, S, hs), v (B, NH, S, hs_v) -> (B, NH, T, hs_v), or with
// opts.heads_last (B, T, NH, hs), (B, S, NH, hs), (B, S, NH, hs_v) -> (B, T, NH, hs_v); with
// opts.enable_gqa k and v may have fewer heads (NKV, dividing NH). One fused
// tape node: only the structural key range of each row tile is computed (causal upper triangle and
// keys outside a local/blocked window cost nothing), scores are masked, softmaxed (fully masked
// rows give 0), optionally dropped out, and multiplied by V; backward computes dQ, dK, dV directly.
AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AttentionMask& mask = {},
                                             const SDPAOptions& opts = {},
                                             Site site = Site::here());

// Self-attention on one packed projection: qkv (B, T, 3, NH, hs) holds q, k and v of every
// position, heads last: a (B, T, 3·NH·hs) in-projection (PyTorch's packed in_proj_weight)
// reshaped. Returns (B, T, NH, hs) (S = T, hs_v = hs; opts.heads_last is implied); one tape node
// differentiates qkv, so the projection's backward is one GEMM. Masks and options as above.
AttentionResult scaled_dot_product_attention_packed(const Tensor& qkv,
                                                    const AttentionMask& mask = {},
                                                    const SDPAOptions& opts = {},
                                                    Site site = Site::here());

// Cross-attention with keys and values from one packed projection: q (B, T, NH, hs) and kv
// (B, S, 2, NH, hs) (NKV heads with opts.enable_gqa), the (B, S, 2·NH·hs) projection of one
// tensor by the last two row blocks of in_proj_weight (PyTorch's in_projection_packed when key is
// value), reshaped. Returns (B, T, NH, hs) (hs_v = hs; opts.heads_last is implied); one tape node
// differentiates q and kv, so the key/value projection's backward is one GEMM. Masks and options
// as above.
AttentionResult scaled_dot_product_attention_kv_packed(const Tensor& q, const Tensor& kv,
                                                       const AttentionMask& mask = {},
                                                       const SDPAOptions& opts = {},
                                                       Site site = Site::here());

// The seed articles' functional form: Q (..., T, hs), K (..., S, hs), V (..., S, hs_v) with
// 2 to 4 dims, mask broadcastable to (..., T, S) where mask == 0 is blocked (undefined: none).
// Returns (output, weights).
std::pair<Tensor, Tensor> attention(const Tensor& Q, const Tensor& K, const Tensor& V,
                                    const Tensor& mask = Tensor(), Site site = Site::here());

// Additive (Bahdanau) attention: score(i, j) = vᵀ tanh(q_i W_qᵀ + k_j W_kᵀ) with q (B, T, Cq),
// k (B, S, Ck), W_q (H, Cq), W_k (H, Ck), v (H); values (B, S, Cv). Mask as above (structure and
// padding; (B, T, S) views). Returns (output (B, T, Cv), weights (B, T, S)). Composed from ops, so
// its backward is exact by construction.
std::pair<Tensor, Tensor> additive_attention(const Tensor& q, const Tensor& k, const Tensor& values,
                                             const Tensor& W_q, const Tensor& W_k, const Tensor& v,
                                             const AttentionMask& mask = {},
                                             Site site = Site::here());

}  // namespace tg
