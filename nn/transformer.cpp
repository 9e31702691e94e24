// nn/transformer.cpp — the Transformer family (see nn/transformer.hpp), step by step as PyTorch
// 1.13's torch/nn/modules/transformer.py (the "slow path": the only one with autograd).
// Shapes: B batch, T target length, S source / memory length, E = d_model, NH heads. The layers
// never transpose: MultiheadAttention reads the layout, LayerNorm and Linear act on the last dim.
#include "nn/transformer.hpp"

#include "autograd/activation_checkpoint.hpp"
#include "autograd/tape.hpp"

#include "nn/init.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace tg::nn {
namespace {

void check_layer_config(const char* mod, int64_t E, int64_t NH, const TransformerLayerOptions& o) {
  if (E <= 0 || NH <= 0 || E % NH != 0)
    throw Error(
        fmt::format("{}: d_model ({}) must be a positive multiple of nhead ({})", mod, E, NH));
  if (o.dim_feedforward <= 0)
    throw Error(fmt::format("{}: dim_feedforward must be > 0, got {}", mod, o.dim_feedforward));
  if (o.dropout < 0 || o.dropout >= 1)
    throw Error(fmt::format("{}: dropout must be in [0, 1), got {}", mod, o.dropout));
  if (!o.activation_fn && o.activation != "relu" && o.activation != "gelu")
    throw Error(fmt::format("{}: activation should be relu/gelu, not \"{}\"", mod, o.activation));
  if (!(o.layer_norm_eps > 0))
    throw Error(fmt::format("{}: layer_norm_eps must be > 0, got {}", mod, o.layer_norm_eps));
}

TransformerLayerOptions positional(int64_t ff, double dropout, const std::string& act, double eps,
                                   bool bf, bool nf) {
  TransformerLayerOptions o;
  o.dim_feedforward = ff;
  o.dropout = dropout;
  o.activation = act;
  o.layer_norm_eps = eps;
  o.batch_first = bf;
  o.norm_first = nf;
  return o;
}

MultiheadAttentionOptions attn_options(const TransformerLayerOptions& o, bool self) {
  MultiheadAttentionOptions m;
  m.dropout = o.dropout;
  m.batch_first = o.batch_first;
  m.num_kv_heads = o.num_kv_heads;
  if (self) m.structure = o.self_attn_structure;
  return m;
}

Tensor activate(const TransformerLayerOptions& o, const Tensor& x) {
  if (o.activation_fn) return o.activation_fn(x);
  return o.activation == "relu" ? relu(x) : gelu(x);
}

const char* layout(bool bf) {
  return bf ? "(B, T, E) with batch_first=true" : "(T, B, E) with batch_first=false";
}

// Layer inputs: defined, 3-D in the module's layout or unbatched 2-D, last dim d_model, the
// parameters' dtype.
void check_input(const std::string& mod, const char* name, const Tensor& x, int64_t E, DType dt,
                 bool bf) {
  if (!x.defined()) throw Error(fmt::format("{}: {} is undefined", mod, name));
  if ((x.dim() != 3 && x.dim() != 2) || x.size(-1) != E)
    throw Error(fmt::format("{}: {} {} must be {} or unbatched (T, E), with E = d_model = {}", mod,
                            name, shape_str(x.shape()), layout(bf), E));
  if (x.dtype() != dt)
    throw Error(fmt::format(
        "{}: {} {} is {} but the layer's parameters are {}; convert one (module.to(dtype) "
        "or tensor.to(dtype))",
        mod, name, shape_str(x.shape()), dtype_name(x.dtype()), dtype_name(dt)));
}

// Runs one attention call; its errors are prefixed with the module path (`...self_attn: `).
std::pair<Tensor, Tensor> attend(const std::string& where, MultiheadAttention& m, const Tensor& q,
                                 const Tensor& kv, const Tensor& mask, const Tensor& kpm,
                                 bool is_causal, const TransformerLayerOptions& o,
                                 KVCache* cache = nullptr) {
  MHAForwardOptions f;
  f.kv_cache = cache;
  f.attn_mask = mask;
  f.key_padding_mask = kpm;
  f.is_causal = is_causal;
  f.need_weights = o.need_weights;
  f.average_attn_weights = o.average_attn_weights;
  try {
    return m.forward(q, kv, kv, f);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", where, e.what()));
  }
}

Tensor kept(const Tensor& w) { return w.defined() ? w.detach() : Tensor(); }

// PyTorch's _get_clones (copy.deepcopy): a fresh layer with the same config, then (Copy) the
// prototype's values, dtype and mode.
template <typename L>
std::shared_ptr<L> clone_layer(const L& p, LayerClone how) {
  auto l = std::make_shared<L>(p.d_model, p.nhead, p.options);
  const DType dt = p.linear1->weight.dtype();
  if (dt != kFloat32) l->to(dt);
  if (how == LayerClone::Copy) {
    l->load_state_dict(p.state_dict());  // copies the values in place
    l->train(p.is_training());
  }
  return l;
}

template <typename L>
std::vector<Tensor> collect(const ModuleList& layers, const Tensor& (L::*get)() const) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < layers.size(); ++i) out.push_back((layers.at<L>(i).get()->*get)());
  return out;
}

// A stack's self-attention structure: the one for both stacks and its own, either alone when the
// other is none.
AttentionMask intersect(const AttentionMask& both, const AttentionMask& own) {
  if (both.is_none()) return own;
  return own.is_none() ? both : both & own;
}

void check_num_layers(const char* mod, int64_t n) {
  if (n < 1) throw Error(fmt::format("{}: num_layers must be >= 1, got {}", mod, n));
}
}  // namespace

// ---- TransformerEncoderLayer -------------------------------------------------------------------

TransformerEncoderLayer::TransformerEncoderLayer(int64_t E, int64_t NH,
                                                 TransformerLayerOptions opts)
    : TensorModule("TransformerEncoderLayer"), d_model(E), nhead(NH), options(std::move(opts)) {
  check_layer_config("TransformerEncoderLayer", E, NH, options);
  const double eps = options.layer_norm_eps, p = options.dropout;
  // PyTorch's registration order, hence its state_dict order.
  self_attn = register_module(
      "self_attn", std::make_shared<MultiheadAttention>(E, NH, attn_options(options, true)));
  linear1 = register_module("linear1", std::make_shared<Linear>(E, options.dim_feedforward));
  dropout = register_module("dropout", std::make_shared<Dropout>(p));
  linear2 = register_module("linear2", std::make_shared<Linear>(options.dim_feedforward, E));
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(E, eps));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(E, eps));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(p));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(p));
}

TransformerEncoderLayer::TransformerEncoderLayer(int64_t E, int64_t NH, int64_t ff, double p,
                                                 const std::string& act, double eps, bool bf,
                                                 bool nf)
    : TransformerEncoderLayer(E, NH, positional(ff, p, act, eps, bf, nf)) {}

// The constructor arguments as PyTorch prints them, shared by both layer kinds.
static std::string layer_repr(int64_t d_model, int64_t nhead, const TransformerLayerOptions& o) {
  std::string s = fmt::format("d_model={}, nhead={}, dim_feedforward={}, dropout={}, activation={}",
                              d_model, nhead, o.dim_feedforward, o.dropout,
                              o.activation_fn ? "<callable>" : o.activation);
  if (o.batch_first) s += ", batch_first=True";
  if (o.norm_first) s += ", norm_first=True";
  if (!o.self_attn_structure.is_none())
    s += ", self_attn_structure=" + o.self_attn_structure.name();
  return s;
}

std::string TransformerEncoderLayer::extra_repr() const {
  return layer_repr(d_model, nhead, options);
}

Tensor TransformerEncoderLayer::sa_block(const Tensor& x, const Tensor& mask, const Tensor& kpm,
                                         bool is_causal, KVCache* cache) {
  auto [out, w] =
      attend(type_name() + ".self_attn", *self_attn, x, x, mask, kpm, is_causal, options, cache);
  self_weights_ = kept(w);
  return dropout1->forward(out);
}

Tensor TransformerEncoderLayer::ff_block(const Tensor& x) {
  return dropout2->forward(
      linear2->forward(dropout->forward(activate(options, linear1->forward(x)))));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src) { return forward(src, Tensor()); }

Tensor TransformerEncoderLayer::forward(const Tensor& src, const Tensor& src_mask,
                                        const Tensor& kpm, bool is_causal) {
  EncoderForwardOptions f;
  f.mask = src_mask;
  f.src_key_padding_mask = kpm;
  f.is_causal = is_causal;
  return forward(src, f);
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const EncoderForwardOptions& f) {
  check_input(type_name(), "src", src, d_model, linear1->weight.dtype(), options.batch_first);
  const Tensor &m = f.mask, &kpm = f.src_key_padding_mask;
  Tensor x = src;
  if (options.norm_first) {
    x = x + sa_block(norm1->forward(x), m, kpm, f.is_causal, f.kv_cache);
    x = x + ff_block(norm2->forward(x));
  } else {
    x = norm1->forward(x + sa_block(x, m, kpm, f.is_causal, f.kv_cache));
    x = norm2->forward(x + ff_block(x));
  }
  return hooked({src}, x);
}

// ---- TransformerDecoderLayer -------------------------------------------------------------------

TransformerDecoderLayer::TransformerDecoderLayer(int64_t E, int64_t NH,
                                                 TransformerLayerOptions opts)
    : Module("TransformerDecoderLayer"), d_model(E), nhead(NH), options(std::move(opts)) {
  check_layer_config("TransformerDecoderLayer", E, NH, options);
  const double eps = options.layer_norm_eps, p = options.dropout;
  self_attn = register_module(
      "self_attn", std::make_shared<MultiheadAttention>(E, NH, attn_options(options, true)));
  multihead_attn = register_module(
      "multihead_attn", std::make_shared<MultiheadAttention>(E, NH, attn_options(options, false)));
  linear1 = register_module("linear1", std::make_shared<Linear>(E, options.dim_feedforward));
  dropout = register_module("dropout", std::make_shared<Dropout>(p));
  linear2 = register_module("linear2", std::make_shared<Linear>(options.dim_feedforward, E));
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(E, eps));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(E, eps));
  norm3 = register_module("norm3", std::make_shared<LayerNorm>(E, eps));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(p));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(p));
  dropout3 = register_module("dropout3", std::make_shared<Dropout>(p));
}

TransformerDecoderLayer::TransformerDecoderLayer(int64_t E, int64_t NH, int64_t ff, double p,
                                                 const std::string& act, double eps, bool bf,
                                                 bool nf)
    : TransformerDecoderLayer(E, NH, positional(ff, p, act, eps, bf, nf)) {}

std::string TransformerDecoderLayer::extra_repr() const {
  return layer_repr(d_model, nhead, options);
}

Tensor TransformerDecoderLayer::sa_block(const Tensor& x, const Tensor& mask, const Tensor& kpm,
                                         bool is_causal) {
  auto [out, w] =
      attend(type_name() + ".self_attn", *self_attn, x, x, mask, kpm, is_causal, options);
  self_weights_ = kept(w);
  return dropout1->forward(out);
}

Tensor TransformerDecoderLayer::mha_block(const Tensor& x, const Tensor& mem, const Tensor& mask,
                                          const Tensor& kpm, bool is_causal) {
  auto [out, w] = attend(type_name() + ".multihead_attn", *multihead_attn, x, mem, mask, kpm,
                         is_causal, options);
  cross_weights_ = kept(w);
  return dropout2->forward(out);
}

Tensor TransformerDecoderLayer::ff_block(const Tensor& x) {
  return dropout3->forward(
      linear2->forward(dropout->forward(activate(options, linear1->forward(x)))));
}

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory,
                                        const Tensor& tgt_mask, const Tensor& memory_mask,
                                        const Tensor& tgt_kpm, const Tensor& memory_kpm,
                                        bool tgt_is_causal, bool memory_is_causal) {
  const DType dt = linear1->weight.dtype();
  check_input(type_name(), "tgt", tgt, d_model, dt, options.batch_first);
  check_input(type_name(), "memory", memory, d_model, dt, options.batch_first);
  const int64_t bdim = options.batch_first ? 0 : 1;
  if (tgt.dim() != memory.dim() || (tgt.dim() == 3 && tgt.size(bdim) != memory.size(bdim)))
    throw Error(fmt::format(
        "{}: tgt {} and memory {} must both be {} with the same B, or both unbatched", type_name(),
        shape_str(tgt.shape()), shape_str(memory.shape()), layout(options.batch_first)));
  Tensor x = tgt;
  if (options.norm_first) {
    x = x + sa_block(norm1->forward(x), tgt_mask, tgt_kpm, tgt_is_causal);
    x = x + mha_block(norm2->forward(x), memory, memory_mask, memory_kpm, memory_is_causal);
    x = x + ff_block(norm3->forward(x));
  } else {
    x = norm1->forward(x + sa_block(x, tgt_mask, tgt_kpm, tgt_is_causal));
    x = norm2->forward(x + mha_block(x, memory, memory_mask, memory_kpm, memory_is_causal));
    x = norm3->forward(x + ff_block(x));
  }
  return hooked({tgt, memory}, x);
}

// ---- stacks ------------------------------------------------------------------------------------

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& proto, int64_t n,
                                       std::shared_ptr<TensorModule> norm_, LayerClone clone)
    : TensorModule("TransformerEncoder"), num_layers(n) {
  check_num_layers("TransformerEncoder", n);
  layers = register_module("layers", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < n; ++i) layers->push_back(clone_layer(proto, clone));
  if (norm_) norm = register_module("norm", std::move(norm_));
}

Tensor TransformerEncoder::forward(const Tensor& src) { return forward(src, Tensor()); }

Tensor TransformerEncoder::forward(const Tensor& src, const Tensor& mask, const Tensor& kpm,
                                   bool is_causal) {
  Tensor x = src;
  const bool ckpt = checkpoint_activations && tg::grad_enabled();
  for (size_t i = 0; i < layers->size(); ++i) {
    if (!ckpt) {
      x = layer(i)->forward(x, mask, kpm, is_causal);
      continue;
    }
    // by value: backward runs the layer again after this call has returned
    x = checkpoint(
        [l = layer(i), mask, kpm, is_causal](const std::vector<Tensor>& in) {
          return l->forward(in[0], mask, kpm, is_causal);
        },
        {x});
  }
  if (norm) x = norm->forward(x);
  return hooked({src}, x);
}

Tensor TransformerEncoder::forward(const Tensor& src, const EncoderForwardOptions& f) {
  if (!f.kv_caches) return forward(src, f.mask, f.src_key_padding_mask, f.is_causal);
  if (f.kv_caches->size() != layers->size())
    throw Error(fmt::format("TransformerEncoder: {} kv_caches for {} layers; give one per layer",
                            f.kv_caches->size(), layers->size()));
  Tensor x = src;
  for (size_t i = 0; i < layers->size(); ++i) {
    EncoderForwardOptions fi = f;
    fi.kv_caches = nullptr;
    fi.kv_cache = &(*f.kv_caches)[i];
    x = layer(i)->forward(x, fi);
  }
  if (norm) x = norm->forward(x);
  return hooked({src}, x);
}

std::vector<Tensor> TransformerEncoder::last_self_attn_weights() const {
  return collect<TransformerEncoderLayer>(*layers,
                                          &TransformerEncoderLayer::last_self_attn_weights);
}

void TransformerEncoder::set_need_weights(bool on, bool average) {
  for (size_t i = 0; i < layers->size(); ++i) {
    layer(i)->options.need_weights = on;
    layer(i)->options.average_attn_weights = average;
  }
}

TransformerDecoder::TransformerDecoder(const TransformerDecoderLayer& proto, int64_t n,
                                       std::shared_ptr<TensorModule> norm_, LayerClone clone)
    : Module("TransformerDecoder"), num_layers(n) {
  check_num_layers("TransformerDecoder", n);
  layers = register_module("layers", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < n; ++i) layers->push_back(clone_layer(proto, clone));
  if (norm_) norm = register_module("norm", std::move(norm_));
}

Tensor TransformerDecoder::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                   const Tensor& memory_mask, const Tensor& tgt_kpm,
                                   const Tensor& memory_kpm, bool tgt_is_causal,
                                   bool memory_is_causal) {
  Tensor x = tgt;
  const bool ckpt = checkpoint_activations && tg::grad_enabled();
  for (size_t i = 0; i < layers->size(); ++i) {
    if (!ckpt) {
      x = layer(i)->forward(x, memory, tgt_mask, memory_mask, tgt_kpm, memory_kpm, tgt_is_causal,
                            memory_is_causal);
      continue;
    }
    x = checkpoint(
        [l = layer(i), tgt_mask, memory_mask, tgt_kpm, memory_kpm, tgt_is_causal,
         memory_is_causal](const std::vector<Tensor>& in) {
          return l->forward(in[0], in[1], tgt_mask, memory_mask, tgt_kpm, memory_kpm, tgt_is_causal,
                            memory_is_causal);
        },
        {x, memory});
  }
  if (norm) x = norm->forward(x);
  return hooked({tgt, memory}, x);
}

std::vector<Tensor> TransformerDecoder::last_self_attn_weights() const {
  return collect<TransformerDecoderLayer>(*layers,
                                          &TransformerDecoderLayer::last_self_attn_weights);
}
std::vector<Tensor> TransformerDecoder::last_cross_attn_weights() const {
  return collect<TransformerDecoderLayer>(*layers,
                                          &TransformerDecoderLayer::last_cross_attn_weights);
}

void TransformerDecoder::set_need_weights(bool on, bool average) {
  for (size_t i = 0; i < layers->size(); ++i) {
    layer(i)->options.need_weights = on;
    layer(i)->options.average_attn_weights = average;
  }
}

// ---- Transformer -------------------------------------------------------------------------------

Transformer::Transformer(TransformerOptions o)
    : Module("Transformer"), d_model(o.d_model), nhead(o.nhead), batch_first(o.batch_first) {
  TransformerLayerOptions lo = o;  // the layer options part, as it is
  if (o.custom_encoder) {
    encoder = register_module("encoder", o.custom_encoder);
  } else {
    lo.self_attn_structure = intersect(o.self_attn_structure, o.encoder_self_attn_structure);
    TransformerEncoderLayer layer(o.d_model, o.nhead, lo);
    encoder = register_module(
        "encoder",
        std::make_shared<TransformerEncoder>(
            layer, o.num_encoder_layers, std::make_shared<LayerNorm>(o.d_model, o.layer_norm_eps)));
  }
  if (o.custom_decoder) {
    decoder = register_module("decoder", o.custom_decoder);
  } else {
    lo.self_attn_structure = intersect(o.self_attn_structure, o.decoder_self_attn_structure);
    TransformerDecoderLayer layer(o.d_model, o.nhead, lo);
    decoder = register_module(
        "decoder",
        std::make_shared<TransformerDecoder>(
            layer, o.num_decoder_layers, std::make_shared<LayerNorm>(o.d_model, o.layer_norm_eps)));
  }
  if (o.need_weights) set_need_weights(true, o.average_attn_weights);  // custom ones too
  // PyTorch's _reset_parameters.
  for (Tensor& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

std::string Transformer::extra_repr() const {
  return fmt::format("d_model={}, nhead={}, num_encoder_layers={}, num_decoder_layers={}{}",
                     d_model, nhead, encoder->num_layers, decoder->num_layers,
                     batch_first ? ", batch_first=True" : "");
}

Tensor Transformer::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask,
                            const Tensor& tgt_mask, const Tensor& memory_mask,
                            const Tensor& src_kpm, const Tensor& tgt_kpm, const Tensor& memory_kpm,
                            bool src_is_causal, bool tgt_is_causal, bool memory_is_causal) {
  if (!src.defined() || !tgt.defined())
    throw Error(fmt::format("Transformer: src and tgt must be defined"));
  const int64_t bdim = batch_first ? 0 : 1;
  if (src.dim() != tgt.dim() || (src.dim() == 3 && src.size(bdim) != tgt.size(bdim)))
    throw Error(
        fmt::format("Transformer: the batch number of src {} and tgt {} must be equal (layout {})",
                    shape_str(src.shape()), shape_str(tgt.shape()), layout(batch_first)));
  if (src.size(-1) != d_model || tgt.size(-1) != d_model)
    throw Error(fmt::format(
        "Transformer: the feature number of src {} and tgt {} must be equal to d_model = {}",
        shape_str(src.shape()), shape_str(tgt.shape()), d_model));
  Tensor memory = encoder->forward(src, src_mask, src_kpm, src_is_causal);
  Tensor out = decoder->forward(tgt, memory, tgt_mask, memory_mask, tgt_kpm, memory_kpm,
                                tgt_is_causal, memory_is_causal);
  return hooked({src, tgt}, out);
}

void Transformer::set_need_weights(bool on, bool average) {
  encoder->set_need_weights(on, average);
  decoder->set_need_weights(on, average);
}

Tensor Transformer::generate_square_subsequent_mask(int64_t T, DType dtype) {
  if (T < 0)
    throw Error(
        fmt::format("Transformer.generate_square_subsequent_mask: size must be >= 0, got {}", T));
  if (!is_floating(dtype))
    throw Error(
        fmt::format("Transformer.generate_square_subsequent_mask: dtype must be float32 or float64 "
                    "(the mask is added to the scores), got {}",
                    dtype_name(dtype)));
  Tensor m = zeros({T, T}, kFloat64);
  double* p = m.data<double>();
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = i + 1; j < T; ++j) p[i * T + j] = -inf;
  return m.to(dtype);
}

}  // namespace tg::nn
