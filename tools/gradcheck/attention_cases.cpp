// tools/gradcheck/attention_cases.cpp — the gradcheck tool's attention builders: functional
// scaled_dot_product_attention ("sdpa") and additive attention with every mask kind,
// MultiheadAttention ("mha") and the Transformer encoder and decoder layers, all batch-first.
// Masks from the options: --causal [--bottom-right], --local L,R, --blocked W [--look-back n]
// [--blocked-causal] (structure); --padding l1,l2,... (valid key lengths per batch element),
// --bool-mask (a random explicit mask), --additive (a random float mask with some -inf; sdpa).
// Deliberately not here: the other ops (cases.cpp), parsing (options.cpp).
#include "tools/gradcheck/builders.hpp"

#include "nn/attention.hpp"
#include "nn/transformer.hpp"
#include "ops/attention/attention.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace tgc {
using tg::AttentionMask;
using tg::Shape;
using tg::Tensor;
namespace {

int64_t key_len(const CaseArgs& a) { return a.src_len > 0 ? a.src_len : a.len; }

AttentionMask structure(const CaseArgs& a) {
  const auto al = a.bottom_right ? tg::CausalAlign::BottomRight : tg::CausalAlign::TopLeft;
  AttentionMask m;
  if (a.causal) m = m & AttentionMask::causal(al);
  if (a.local) m = m & AttentionMask::local(a.local->first, a.local->second, al);
  if (a.blocked) m = m & AttentionMask::blocked(a.blocked, {a.look_back, 0, a.blocked_causal}, al);
  return m;
}

// (B, S) bool from valid lengths: True where j < length (allowed) or, with padding_true, True
// where j >= length (PyTorch's key_padding_mask).
Tensor lengths_mask(const std::vector<int64_t>& lens, const char* opt, int64_t B, int64_t S,
                    bool padding_true) {
  if (static_cast<int64_t>(lens.size()) != B)
    throw UsageError(fmt::format("{} gives {} lengths; expected one per batch element (B = {})",
                                 opt, lens.size(), B));
  std::vector<bool> v;
  for (int64_t b = 0; b < B; ++b) {
    if (lens[b] > S)
      throw UsageError(fmt::format("{}: length {} exceeds the key length S = {}", opt, lens[b], S));
    for (int64_t j = 0; j < S; ++j) v.push_back((j < lens[b]) != padding_true);
  }
  return tg::tensor(v, {B, S});
}

// (T, S) bool, True with probability p (row 0 always keeps key 0 so not every row is empty).
Tensor random_bool(int64_t T, int64_t S, double p) {
  Tensor u = tg::rand({T, S}, tg::kFloat64);
  std::vector<bool> v;
  for (double x : u.to_vector<double>()) v.push_back(x < p);
  v[0] = true;
  return tg::tensor(v, {T, S});
}

// The mask the sdpa options describe: structure, padding, a random bool or additive mask.
AttentionMask sdpa_mask(const CaseArgs& a) {
  const int64_t B = a.batch, T = a.len, S = key_len(a);
  AttentionMask m = structure(a);
  if (!a.padding.empty())
    m = m &
        (a.pad_bool ? AttentionMask::key_padding(lengths_mask(a.padding, "--padding", B, S, false),
                                                 tg::MaskPolarity::TrueAllowed)
                    : AttentionMask::key_lengths(tg::tensor(a.padding)));
  if (a.bool_mask)
    m = m & AttentionMask::from_bool(random_bool(T, S, 0.7), tg::MaskPolarity::TrueAllowed);
  if (a.additive) {
    Tensor add = tg::randn({T, S}, tg::kFloat64);
    Tensor u = tg::rand({T, S}, tg::kFloat64);
    for (int64_t e = 1; e < T * S; ++e)  // e = 0 stays finite
      if (u.data<double>()[e] < 0.2) add.data<double>()[e] = -INFINITY;
    m = m & AttentionMask::additive(add);
  }
  return m;
}

// Layout 0: q, k, v (B, NH, T|S, hs); 1: packed qkv (B, T, 3, NH, hs) (self-attention, S = T);
// 2: q (B, T, NH, hs) and packed kv (B, S, 2, NH, hs).
BuiltCase build_sdpa_layout(const CaseArgs& a, int layout) {
  const int64_t B = a.batch, NH = a.heads, T = a.len, S = key_len(a), hs = a.head_size;
  if (layout == 1 && S != T)
    throw UsageError(
        fmt::format("--op sdpa_packed is self-attention: --src-len {} != --len {}", S, T));
  const AttentionMask m = sdpa_mask(a);
  tg::SDPAOptions o;
  o.dropout_p = a.dropout;
  BuiltCase c;
  if (layout == 0) {
    c.inputs = {leaf({B, NH, T, hs}), leaf({B, NH, S, hs}), leaf({B, NH, S, hs})};
    c.names = {"q", "k", "v"};
  } else if (layout == 1) {
    c.inputs = {leaf({B, T, 3, NH, hs})};
    c.names = {"qkv"};
  } else {
    c.inputs = {leaf({B, T, NH, hs}), leaf({B, S, 2, NH, hs})};
    c.names = {"q", "kv"};
  }
  c.fn = [m, o, layout](const std::vector<Tensor>& in) {
    if (o.dropout_p > 0) tg::manual_seed(1234);  // the same dropout mask every evaluation
    if (layout == 1) return tg::scaled_dot_product_attention_packed(in[0], m, o).output;
    if (layout == 2) return tg::scaled_dot_product_attention_kv_packed(in[0], in[1], m, o).output;
    return tg::scaled_dot_product_attention(in[0], in[1], in[2], m, o).output;
  };
  return c;
}

// The seed articles' attention(Q, K, V, mask): the output (the weights carry no gradient, as
// the fused node's need_weights output: ops/attention/sdpa.cpp).
BuiltCase build_plain_attention(const CaseArgs& a) {
  const int64_t B = a.batch, T = a.len, S = key_len(a), hs = a.head_size;
  Tensor mask = a.bool_mask ? random_bool(T, S, 0.7) : Tensor();
  BuiltCase c;
  c.inputs = {leaf({B, T, hs}), leaf({B, S, hs}), leaf({B, S, hs})};
  c.names = {"Q", "K", "V"};
  c.fn = [mask](const std::vector<Tensor>& in) {
    return tg::attention(in[0], in[1], in[2], mask).first;
  };
  return c;
}

BuiltCase build_additive(const CaseArgs& a) {
  const int64_t B = a.batch, T = a.len, S = key_len(a), C = a.embed, H = a.head_size;
  AttentionMask m = structure(a);
  if (!a.padding.empty()) m = m & AttentionMask::key_lengths(tg::tensor(a.padding));
  BuiltCase c;
  c.inputs = {leaf({B, T, C}), leaf({B, S, C}), leaf({B, S, 2}),
              leaf({H, C}),    leaf({H, C}),    leaf({H})};
  c.names = {"q", "k", "values", "W_q", "W_k", "v"};
  c.fn = [m](const std::vector<Tensor>& in) {
    return tg::additive_attention(in[0], in[1], in[2], in[3], in[4], in[5], m).first;
  };
  return c;
}

void add_params(BuiltCase& c, tg::nn::Module& m) {
  for (auto& [name, p] : m.named_parameters()) {
    c.inputs.push_back(p);
    c.names.push_back(name);
  }
}

BuiltCase build_mha(const CaseArgs& a) {
  const int64_t B = a.batch, T = a.len, S = key_len(a), E = a.embed;
  if (E % a.heads)
    throw UsageError(fmt::format("--embed {} must be divisible by --heads {}", E, a.heads));
  tg::nn::MultiheadAttentionOptions o;
  o.batch_first = true;
  o.dropout = a.dropout;
  o.structure = structure(a);
  auto m = std::make_shared<tg::nn::MultiheadAttention>(E, a.heads, o);
  m->to(tg::kFloat64);
  tg::nn::MHAForwardOptions f;
  f.need_weights = false;
  if (!a.padding.empty()) f.key_padding_mask = lengths_mask(a.padding, "--padding", B, S, true);
  if (a.bool_mask) f.attn_mask = tg::logical_not(random_bool(T, S, 0.7));  // True = blocked
  const bool self = S == T && a.src_len < 0;
  BuiltCase c;
  c.inputs = {leaf({B, T, E})};
  c.names = {self ? "x" : "query"};
  if (!self) {
    c.inputs.push_back(leaf({B, S, E}));
    c.names.push_back("memory");
  }
  add_params(c, *m);
  c.keep = m;
  const double p = a.dropout;
  c.fn = [m = m.get(), f, self, p](const std::vector<Tensor>& in) {
    if (p > 0) tg::manual_seed(1234);
    const Tensor& kv = self ? in[0] : in[1];
    return m->forward(in[0], kv, kv, f).first;
  };
  return c;
}

tg::nn::TransformerLayerOptions layer_options(const CaseArgs& a) {
  if (a.embed % a.heads)
    throw UsageError(fmt::format("--embed {} must be divisible by --heads {}", a.embed, a.heads));
  tg::nn::TransformerLayerOptions o;
  o.dim_feedforward = a.ff;
  o.dropout = a.dropout;
  o.activation = a.activation;
  o.norm_first = a.norm_first;
  o.batch_first = true;
  o.self_attn_structure = structure(a);
  return o;
}

BuiltCase build_encoder(const CaseArgs& a) {
  const int64_t B = a.batch, T = a.len;
  auto m = std::make_shared<tg::nn::TransformerEncoderLayer>(a.embed, a.heads, layer_options(a));
  m->to(tg::kFloat64);
  Tensor kpm = a.padding.empty() ? Tensor() : lengths_mask(a.padding, "--padding", B, T, true);
  Tensor am = a.bool_mask ? tg::logical_not(random_bool(T, T, 0.7)) : Tensor();
  BuiltCase c;
  c.inputs = {leaf({B, T, a.embed})};
  c.names = {"src"};
  add_params(c, *m);
  c.keep = m;
  const double p = a.dropout;
  c.fn = [m = m.get(), kpm, am, p](const std::vector<Tensor>& in) {
    if (p > 0) tg::manual_seed(1234);
    return m->forward(in[0], am, kpm);
  };
  return c;
}

BuiltCase build_decoder(const CaseArgs& a) {
  const int64_t B = a.batch, T = a.len, S = key_len(a);
  auto m = std::make_shared<tg::nn::TransformerDecoderLayer>(a.embed, a.heads, layer_options(a));
  m->to(tg::kFloat64);
  Tensor kpm = a.padding.empty() ? Tensor() : lengths_mask(a.padding, "--padding", B, T, true);
  Tensor mkpm =
      a.mem_padding.empty() ? Tensor() : lengths_mask(a.mem_padding, "--mem-padding", B, S, true);
  Tensor am = a.bool_mask ? tg::logical_not(random_bool(T, T, 0.7)) : Tensor();
  BuiltCase c;
  c.inputs = {leaf({B, T, a.embed}), leaf({B, S, a.embed})};
  c.names = {"tgt", "memory"};
  add_params(c, *m);
  c.keep = m;
  const double p = a.dropout;
  c.fn = [m = m.get(), kpm, mkpm, am, p](const std::vector<Tensor>& in) {
    if (p > 0) tg::manual_seed(1234);
    return m->forward(in[0], in[1], am, Tensor(), kpm, mkpm);
  };
  return c;
}

const char* kMaskHelp =
    "[--causal [--bottom-right]] [--local L,R] [--blocked W [--look-back n] [--blocked-causal]] "
    "[--padding l1,..,lB] [--bool-mask]";

}  // namespace

void add_attention(std::vector<OpInfo>& r) {
  const std::string m = kMaskHelp;
  r.push_back({"sdpa",
               "--batch B --heads NH --len T --src-len S --head-size hs " + m +
                   " [--pad-bool] [--additive] [--dropout p]",
               [](const CaseArgs& a) { return build_sdpa_layout(a, 0); },
               {"scaled_dot_product_attention"}});
  r.push_back({"sdpa_packed",
               "as sdpa, self-attention on one packed qkv (B, T, 3, NH, hs)",
               [](const CaseArgs& a) { return build_sdpa_layout(a, 1); },
               {"scaled_dot_product_attention_packed"}});
  r.push_back({"sdpa_kv_packed",
               "as sdpa, q (B, T, NH, hs) and packed kv (B, S, 2, NH, hs)",
               [](const CaseArgs& a) { return build_sdpa_layout(a, 2); },
               {"scaled_dot_product_attention_kv_packed"}});
  r.push_back({"attention",
               "--batch B --len T --src-len S --head-size hs [--bool-mask]: the seed articles' "
               "attention (its output)",
               build_plain_attention});
  r.push_back({"additive_attention",
               "--batch B --len T --src-len S --embed C --head-size H [--causal] [--local L,R] "
               "[--padding ...]",
               build_additive});
  r.push_back(
      {"mha", "--batch B --len T [--src-len S: cross] --embed E --heads NH " + m + " [--dropout p]",
       build_mha});
  r.push_back({"encoder_layer",
               "--batch B --len T --embed E --heads NH --ff F [--norm-first] "
               "[--activation relu|gelu] [--dropout p] " +
                   m,
               build_encoder});
  r.push_back({"decoder_layer",
               "--batch B --len T --src-len S --embed E --heads NH --ff F [--mem-padding ...] "
               "[--norm-first] [--activation relu|gelu] [--dropout p] " +
                   m,
               build_decoder});
}

}  // namespace tgc
