// nn/transformer.hpp — PyTorch 1.13's nn.Transformer family with its semantics, defaults and
// parameter names (a PyTorch state dict loads without renaming): TransformerEncoderLayer,
// TransformerDecoderLayer, the stacks TransformerEncoder / TransformerDecoder (`layers.0.…`,
// optional final `norm`) and Transformer (`encoder.…`, `decoder.…`, xavier_uniform_ reset).
//
// Layouts and masks are PyTorch's: src/tgt/memory (T, B, E), or (B, T, E) with batch_first, or
// unbatched (T, E). Attention masks (T, S) or (B·NH, T, S): bool True = NOT allowed, or float
// added to the scores (generate_square_subsequent_mask gives the float causal one). Key padding
// masks (B, S): bool True = padding. `is_causal` (PyTorch 2's argument) applies a causal mask
// when no explicit mask is given and is ignored (a hint) when one is.
//
// Our extensions, off by default and free when off:
//  - self_attn_structure: an AttentionMask (causal, local(left, right), blocked(W)) handed to the
//    self-attention's MultiheadAttentionOptions.structure, applied in every forward in O(T·W)
//    without a dense T×S mask. It intersects with the masks passed to forward.
//  - need_weights: every layer keeps its last forward's attention weights (detached; (B, T, S)
//    averaged over heads, or (B, NH, T, S) with average_attn_weights = false; (T, S) unbatched):
//    last_self_attn_weights() and, for decoder layers, last_cross_attn_weights(); the stacks
//    return one tensor per layer. PyTorch hard-codes need_weights=False inside these layers.
//  - Unlike PyTorch, a fully masked attention row gives zeros (never NaN), and the encoder never
//    takes PyTorch's inference-only nested-tensor path (which zeroes padded positions).
// Layers end their forward with Module::hooked({src}) / hooked({tgt, memory}).
// Deliberately not here: embeddings, positional encodings and output heads (nn/layers.hpp).
#pragma once

#include "nn/attention.hpp"
#include "nn/layers.hpp"
#include "nn/module.hpp"
#include "ops/attention/attention.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tg::nn {

// Options of one encoder or decoder layer (everything but d_model and nhead), PyTorch's defaults.
struct TransformerLayerOptions {
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;             // attention, feed-forward and residual dropouts
  std::string activation = "relu";  // "relu" or "gelu" (erf, PyTorch's F.gelu)
  // A unary callable instead of the named activation (PyTorch accepts one); wins when set.
  std::function<Tensor(const Tensor&)> activation_fn;
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
  // ---- extensions ----
  AttentionMask self_attn_structure;  // causal / local / blocked self-attention, O(T·W)
  bool need_weights = false;          // keep the last forward's attention weights
  bool average_attn_weights = true;   // weights averaged over heads (B, T, S), else (B, NH, T, S)
  int64_t num_kv_heads = -1;          // grouped-query attention: MultiheadAttentionOptions'
};
using TransformerEncoderLayerOptions = TransformerLayerOptions;
using TransformerDecoderLayerOptions = TransformerLayerOptions;

// Keyword-style arguments of the forwards (the positional forms stay): fill what you need, e.g.
//   tg::nn::EncoderForwardOptions f;  f.is_causal = true;  encoder.forward(x, f);
// Each field means what the positional argument of the same name means.
struct EncoderForwardOptions {
  Tensor mask;  // the layer's src_mask
  Tensor src_key_padding_mask;
  bool is_causal = false;
  // Incremental decoding (our extension; MHAForwardOptions::kv_cache): a layer's self-attention
  // cache, or for a stack one cache per layer. Only the structure mask applies with them.
  KVCache* kv_cache = nullptr;
  std::vector<KVCache>* kv_caches = nullptr;
};
struct DecoderForwardOptions {
  Tensor tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask;
  bool tgt_is_causal = false, memory_is_causal = false;
};
struct TransformerForwardOptions {
  Tensor src_mask, tgt_mask, memory_mask;
  Tensor src_key_padding_mask, tgt_key_padding_mask, memory_key_padding_mask;
  bool src_is_causal = false, tgt_is_causal = false, memory_is_causal = false;
};

// x = norm1(x + dropout1(self_attn(x))); x = norm2(x + dropout2(linear2(dropout(act(linear1(x))))))
// (post-norm), or x = x + sa(norm1(x)); x = x + ff(norm2(x)) with norm_first.
class TransformerEncoderLayer : public TensorModule {
 public:
  TransformerEncoderLayer(int64_t d_model, int64_t nhead, TransformerLayerOptions opts = {});
  // PyTorch's positional order.
  TransformerEncoderLayer(int64_t d_model, int64_t nhead, int64_t dim_feedforward,
                          double dropout = 0.1, const std::string& activation = "relu",
                          double layer_norm_eps = 1e-5, bool batch_first = false,
                          bool norm_first = false);
  // src (T, B, E) / (B, T, E) / (T, E) -> same shape.
  Tensor forward(const Tensor& src) override;
  Tensor forward(const Tensor& src, const Tensor& src_mask,
                 const Tensor& src_key_padding_mask = Tensor(), bool is_causal = false);
  Tensor forward(const Tensor& src, const EncoderForwardOptions& f);
  std::string extra_repr() const override;
  const Tensor& last_self_attn_weights() const {
    return self_weights_;
  }  // undefined unless need_weights

  int64_t d_model, nhead;
  TransformerLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  std::shared_ptr<LayerNorm> norm1, norm2;

 private:
  Tensor self_weights_;
  Tensor sa_block(const Tensor& x, const Tensor& mask, const Tensor& kpm, bool is_causal,
                  KVCache* cache);
  Tensor ff_block(const Tensor& x);
};

// Post-norm: x = norm1(x + sa(x)); x = norm2(x + mha(x, memory)); x = norm3(x + ff(x)); with
// norm_first each block reads norm_k(x) and adds to x.
class TransformerDecoderLayer : public Module {
 public:
  TransformerDecoderLayer(int64_t d_model, int64_t nhead, TransformerLayerOptions opts = {});
  TransformerDecoderLayer(int64_t d_model, int64_t nhead, int64_t dim_feedforward,
                          double dropout = 0.1, const std::string& activation = "relu",
                          double layer_norm_eps = 1e-5, bool batch_first = false,
                          bool norm_first = false);
  // tgt (T, B, E), memory (S, B, E) (batch-first / unbatched likewise) -> tgt's shape.
  // tgt_mask (T, T) / (B·NH, T, T); memory_mask (T, S) / (B·NH, T, S); padding (B, T) / (B, S).
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = Tensor(),
                 const Tensor& memory_mask = Tensor(),
                 const Tensor& tgt_key_padding_mask = Tensor(),
                 const Tensor& memory_key_padding_mask = Tensor(), bool tgt_is_causal = false,
                 bool memory_is_causal = false);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const DecoderForwardOptions& f) {
    return forward(tgt, memory, f.tgt_mask, f.memory_mask, f.tgt_key_padding_mask,
                   f.memory_key_padding_mask, f.tgt_is_causal, f.memory_is_causal);
  }
  std::string extra_repr() const override;
  const Tensor& last_self_attn_weights() const { return self_weights_; }
  const Tensor& last_cross_attn_weights() const { return cross_weights_; }

  int64_t d_model, nhead;
  TransformerLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn, multihead_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2, dropout3;
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;

 private:
  Tensor self_weights_, cross_weights_;
  Tensor sa_block(const Tensor& x, const Tensor& mask, const Tensor& kpm, bool is_causal);
  Tensor mha_block(const Tensor& x, const Tensor& mem, const Tensor& mask, const Tensor& kpm,
                   bool is_causal);
  Tensor ff_block(const Tensor& x);
};

// How a stack makes its layers from the layer it is given.
enum class LayerClone {
  Copy,   // PyTorch's copy.deepcopy: every layer starts with the given layer's values (all equal)
  Fresh,  // every layer built anew with the same config: independently initialised
};        // Both keep the given layer's dtype; Copy also its train/eval mode. Hooks are not copied.

// PyTorch's TransformerEncoder(encoder_layer, num_layers, norm): children `layers` (a ModuleList
// of num_layers copies; the given layer itself is not registered) and `norm` when given.
class TransformerEncoder : public TensorModule {
 public:
  TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers,
                     std::shared_ptr<TensorModule> norm = nullptr,
                     LayerClone clone = LayerClone::Copy);
  Tensor forward(const Tensor& src) override;
  virtual Tensor forward(const Tensor& src, const Tensor& mask,
                         const Tensor& src_key_padding_mask = Tensor(), bool is_causal = false);
  Tensor forward(const Tensor& src, const EncoderForwardOptions& f);
  // One entry per layer (undefined where the layer kept none).
  std::vector<Tensor> last_self_attn_weights() const;
  // Sets need_weights (and average_attn_weights) on every layer.
  void set_need_weights(bool on, bool average_attn_weights = true);
  std::shared_ptr<TransformerEncoderLayer> layer(size_t i) const {
    return layers->at<TransformerEncoderLayer>(i);
  }

  int64_t num_layers;
  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<TensorModule> norm;  // null when none
  // Each layer under tg::checkpoint while recording (autograd/activation_checkpoint.hpp): its
  // activations are recomputed during backward instead of kept. Not with kv_caches.
  bool checkpoint_activations = false;
};

class TransformerDecoder : public Module {
 public:
  TransformerDecoder(const TransformerDecoderLayer& decoder_layer, int64_t num_layers,
                     std::shared_ptr<TensorModule> norm = nullptr,
                     LayerClone clone = LayerClone::Copy);
  virtual Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = Tensor(),
                         const Tensor& memory_mask = Tensor(),
                         const Tensor& tgt_key_padding_mask = Tensor(),
                         const Tensor& memory_key_padding_mask = Tensor(),
                         bool tgt_is_causal = false, bool memory_is_causal = false);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const DecoderForwardOptions& f) {
    return forward(tgt, memory, f.tgt_mask, f.memory_mask, f.tgt_key_padding_mask,
                   f.memory_key_padding_mask, f.tgt_is_causal, f.memory_is_causal);
  }
  std::vector<Tensor> last_self_attn_weights() const;
  std::vector<Tensor> last_cross_attn_weights() const;
  void set_need_weights(bool on, bool average_attn_weights = true);
  bool checkpoint_activations = false;  // as TransformerEncoder's
  std::shared_ptr<TransformerDecoderLayer> layer(size_t i) const {
    return layers->at<TransformerDecoderLayer>(i);
  }

  int64_t num_layers;
  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<TensorModule> norm;
};

// PyTorch's Transformer arguments. The layer options (dim_feedforward, dropout, activation,
// layer_norm_eps, batch_first, norm_first and the extensions) are inherited, so every built layer
// takes this object's TransformerLayerOptions part as it is.
struct TransformerOptions : TransformerLayerOptions {
  int64_t d_model = 512;
  int64_t nhead = 8;
  int64_t num_encoder_layers = 6;
  int64_t num_decoder_layers = 6;
  std::shared_ptr<TransformerEncoder> custom_encoder;  // used as `encoder` when set
  std::shared_ptr<TransformerDecoder> custom_decoder;  // used as `decoder` when set
  // ---- extensions (for the built encoder / decoder layers) ----
  // Each stack's self-attention structure, intersected with the inherited self_attn_structure
  // (which applies to both). need_weights: on every layer, custom encoder / decoder included.
  AttentionMask encoder_self_attn_structure;
  AttentionMask decoder_self_attn_structure;
};

// encoder = TransformerEncoder(layer, num_encoder_layers, LayerNorm), decoder likewise; then
// xavier_uniform_ on every parameter with more than one dim (custom encoder/decoder included),
// like PyTorch's _reset_parameters.
class Transformer : public Module {
 public:
  explicit Transformer(TransformerOptions opts = {});
  // src (S, B, E), tgt (T, B, E) (batch-first / unbatched likewise) -> (T, B, E).
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = Tensor(),
                 const Tensor& tgt_mask = Tensor(), const Tensor& memory_mask = Tensor(),
                 const Tensor& src_key_padding_mask = Tensor(),
                 const Tensor& tgt_key_padding_mask = Tensor(),
                 const Tensor& memory_key_padding_mask = Tensor(), bool src_is_causal = false,
                 bool tgt_is_causal = false, bool memory_is_causal = false);
  Tensor forward(const Tensor& src, const Tensor& tgt, const TransformerForwardOptions& f) {
    return forward(src, tgt, f.src_mask, f.tgt_mask, f.memory_mask, f.src_key_padding_mask,
                   f.tgt_key_padding_mask, f.memory_key_padding_mask, f.src_is_causal,
                   f.tgt_is_causal, f.memory_is_causal);
  }
  std::string extra_repr() const override;
  void set_need_weights(bool on, bool average_attn_weights = true);
  // (T, T) float mask: 0 on and below the diagonal, -inf above (PyTorch's causal float mask).
  static Tensor generate_square_subsequent_mask(int64_t T, DType dtype = kFloat32);

  int64_t d_model, nhead;
  bool batch_first;
  std::shared_ptr<TransformerEncoder> encoder;
  std::shared_ptr<TransformerDecoder> decoder;
};

}  // namespace tg::nn
