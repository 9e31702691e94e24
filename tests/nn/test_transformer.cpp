// tests/nn/test_transformer.cpp — the Transformer family: parity with torch 1.13's
// nn.TransformerEncoderLayer / DecoderLayer / Encoder / Decoder / Transformer on every
// configuration in tests/fixtures/transformer/<name>.safetensors (outputs and the gradients of
// inputs and every parameter; float64 to 1e-10, float32 to 1e-5), float64 gradchecks through
// encoder and decoder layers with local / blocked self-attention and padding (incl. fully masked
// rows), per-layer attention weights, the causal mask helper, names, stack cloning, hooks, errors,
// and a seeded end-to-end run that learns to reverse sequences.
#include "fixtures.hpp"
#include "helpers.hpp"

#include "nn/optim.hpp"
#include "nn/transformer.hpp"

#include <chrono>
#include <cmath>
#include <map>

using namespace tg;
using nn::Transformer;
using nn::TransformerDecoder;
using nn::TransformerDecoderLayer;
using nn::TransformerEncoder;
using nn::TransformerEncoderLayer;

namespace {
// One file per configuration: tests/fixtures/transformer/<name>.safetensors
// (tools/make_transformer_fixtures.py).
std::map<std::string, std::string> read_config(const std::string& name) {
  return tgt::Fixture("transformer/" + name).metadata();
}
std::vector<std::string> split(const std::string& s) { return tgt::split(s); }
Tensor fx(const std::string& cfg, const std::string& tensor) {
  return tgt::Fixture("transformer/" + cfg).tensor(tensor);
}

nn::TransformerLayerOptions layer_options(std::map<std::string, std::string>& cfg) {
  nn::TransformerLayerOptions o;
  o.dim_feedforward = std::stoll(cfg.at("dim_feedforward"));
  o.dropout = 0.0;
  o.activation = cfg.at("activation");
  o.norm_first = cfg.at("norm_first") == "1";
  o.batch_first = cfg.at("batch_first") == "1";
  return o;
}

void run_parity(const std::string& name, DType dt, double atol, double rtol) {
  auto cfg = read_config(name);
  const int64_t E = std::stoll(cfg.at("d_model")), NH = std::stoll(cfg.at("nhead"));
  const int64_t L = std::stoll(cfg.at("num_layers"));
  const std::string kind = cfg.at("module");
  nn::TransformerLayerOptions lo = layer_options(cfg);

  std::map<std::string, Tensor> in, mask;
  for (const std::string& n : split(cfg.at("inputs")))
    in[n] = fx(name, n).to(dt).detach().requires_grad_();
  for (const std::string& n : split(cfg.at("masks"))) {
    Tensor m = fx(name, n);
    mask[n] = m.dtype() == kBool ? m : m.to(dt);
  }
  auto M = [&](const char* n) { return mask.count(n) ? mask.at(n) : Tensor(); };

  std::shared_ptr<nn::Module> mod;
  std::function<Tensor()> run;
  if (kind == "enc_layer") {
    auto m = std::make_shared<TransformerEncoderLayer>(E, NH, lo);
    run = [=] { return m->forward(in.at("src"), M("src_mask"), M("src_key_padding_mask")); };
    mod = m;
  } else if (kind == "encoder") {
    auto m = std::make_shared<TransformerEncoder>(TransformerEncoderLayer(E, NH, lo), L,
                                                  std::make_shared<nn::LayerNorm>(E));
    run = [=] { return m->forward(in.at("src"), M("src_mask"), M("src_key_padding_mask")); };
    mod = m;
  } else if (kind == "dec_layer" || kind == "decoder") {
    std::function<Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                         const Tensor&)>
        f;
    if (kind == "dec_layer") {
      auto m = std::make_shared<TransformerDecoderLayer>(E, NH, lo);
      mod = m;
      f = [m](auto&... a) { return m->forward(a...); };
    } else {
      auto m = std::make_shared<TransformerDecoder>(TransformerDecoderLayer(E, NH, lo), L,
                                                    std::make_shared<nn::LayerNorm>(E));
      mod = m;
      f = [m](auto&... a) { return m->forward(a...); };
    }
    run = [=] {
      return f(in.at("tgt"), in.at("memory"), M("tgt_mask"), M("memory_mask"),
               M("tgt_key_padding_mask"), M("memory_key_padding_mask"));
    };
  } else {
    REQUIRE(kind == "transformer");
    nn::TransformerOptions o;
    o.d_model = E;
    o.nhead = NH;
    o.num_encoder_layers = o.num_decoder_layers = 1;
    o.dim_feedforward = lo.dim_feedforward;
    o.dropout = 0.0;
    o.activation = lo.activation;
    o.batch_first = lo.batch_first;
    o.norm_first = lo.norm_first;
    auto m = std::make_shared<Transformer>(o);
    run = [=] {
      return m->forward(in.at("src"), in.at("tgt"), M("src_mask"), M("tgt_mask"), M("memory_mask"),
                        M("src_key_padding_mask"), M("tgt_key_padding_mask"),
                        M("memory_key_padding_mask"));
    };
    mod = m;
  }
  mod->to(dt);
  nn::StateDict sd;
  for (const std::string& p : split(cfg.at("params"))) sd.insert(p, fx(name, p).to(dt));
  mod->load_state_dict(sd);  // strict: names and shapes are PyTorch's

  Tensor out = run();
  const std::string what = fmt::format("{} ({})", name, dtype_name(dt));
  tgt::require_close(out, fx(name, "out"), atol, rtol, what + " out");
  out.backward(fx(name, "d_out").to(dt));
  for (auto& [n, t] : in)
    tgt::require_close(t.grad(), fx(name, "d_" + n), atol, rtol, what + " d_" + n);
  for (auto& [pname, p] : mod->named_parameters())
    tgt::require_close(p.grad(), fx(name, "d_" + pname), atol, rtol, what + " d_" + pname);
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
}  // namespace

TEST_CASE("Transformer family matches PyTorch on every fixture configuration",
          "[transformer][parity]") {
  std::vector<std::string> names = tgt::fixture_index("transformer");
  REQUIRE(names.size() >= 10);
  for (const std::string& n : names) {
    SECTION(n + " float64") { run_parity(n, kFloat64, 1e-10, 1e-10); }
    SECTION(n + " float32") { run_parity(n, kFloat32, 1e-5, 1e-4); }
  }
}

TEST_CASE("Transformer layer gradchecks: structures, padding, fully masked rows", "[transformer]") {
  manual_seed(11);
  const int64_t E = 4, NH = 2, FF = 6, B = 2, T = 5, S = 3;
  // Batch 0: keys 1..4 padded, so with local(1, 0) rows 2..4 of batch 0 see no key.
  Tensor kpm = tensor(
      std::vector<bool>{false, true, true, true, true, false, false, false, false, true}, {B, T});
  struct Case {
    std::string name;
    AttentionMask structure;
    bool norm_first, batch_first, padding, is_causal;
    std::string act;
  };
  std::vector<Case> cases = {
      {"local(1,0) + padding, fully masked rows, post-norm", AttentionMask::local(1, 0), false,
       true, true, false, "relu"},
      {"local(1,1) pre-norm gelu", AttentionMask::local(1, 1), true, false, false, false, "gelu"},
      {"blocked(2) causal + padding", AttentionMask::blocked(2, {0, 0, true}), false, false, true,
       false, "gelu"},
      {"is_causal, pre-norm", AttentionMask(), true, true, false, true, "relu"},
  };
  for (const Case& c : cases) {
    nn::TransformerLayerOptions o;
    o.dim_feedforward = FF;
    o.dropout = 0;
    o.activation = c.act;
    o.norm_first = c.norm_first;
    o.batch_first = c.batch_first;
    o.self_attn_structure = c.structure;
    const Tensor pad = c.padding ? kpm : Tensor();
    Shape tshape = c.batch_first ? Shape{B, T, E} : Shape{T, B, E};
    Shape sshape = c.batch_first ? Shape{B, S, E} : Shape{S, B, E};

    TransformerEncoderLayer enc(E, NH, o);
    enc.to(kFloat64);
    std::vector<Tensor> inputs{tgt::leaf(tshape)};
    for (Tensor& p : enc.parameters()) inputs.push_back(p);
    Tensor probe = enc.forward(inputs[0], Tensor(), pad, c.is_causal);
    for (double v : values(probe)) REQUIRE(std::isfinite(v));
    tgt::check_grad(
        [&](const std::vector<Tensor>& x) { return enc.forward(x[0], Tensor(), pad, c.is_causal); },
        inputs, "encoder layer " + c.name);

    TransformerDecoderLayer dec(E, NH, o);
    dec.to(kFloat64);
    Tensor mem_pad = tensor(std::vector<bool>{false, false, true, false, false, false}, {B, S});
    inputs = {tgt::leaf(tshape), tgt::leaf(sshape)};
    for (Tensor& p : dec.parameters()) inputs.push_back(p);
    tgt::check_grad(
        [&](const std::vector<Tensor>& x) {
          return dec.forward(x[0], x[1], Tensor(), Tensor(), pad, mem_pad, c.is_causal);
        },
        inputs, "decoder layer " + c.name);
  }
}

TEST_CASE("self_attn_structure gives the same result as the equivalent explicit mask",
          "[transformer]") {
  manual_seed(12);
  const int64_t E = 8, NH = 2, B = 2, T = 7;
  nn::TransformerLayerOptions o;
  o.dim_feedforward = 16;
  o.dropout = 0;
  TransformerEncoderLayer plain(E, NH, o);
  o.self_attn_structure = AttentionMask::local(2, 0);
  TransformerEncoderLayer windowed(E, NH, o);
  windowed.load_state_dict(plain.state_dict());
  // Explicit (T, T) bool mask, True = blocked: j outside [i - 2, i].
  std::vector<bool> blocked;
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j) blocked.push_back(!(j >= i - 2 && j <= i));
  Tensor x = randn({T, B, E});
  Tensor a = windowed.forward(x), b = plain.forward(x, tensor(blocked, {T, T}));
  tgt::require_close(a, b, 1e-6, 1e-5, "local(2,0) structure vs explicit mask");
  // is_causal without a mask = the float causal mask = the bool causal mask.
  Tensor c1 = plain.forward(x, Tensor(), Tensor(), true);
  Tensor c2 = plain.forward(x, Transformer::generate_square_subsequent_mask(T));
  tgt::require_close(c1, c2, 1e-6, 1e-5, "is_causal vs generate_square_subsequent_mask");
  REQUIRE(windowed.extra_repr().find("self_attn_structure=") != std::string::npos);
}

TEST_CASE("per-layer attention weights are kept only when asked", "[transformer]") {
  manual_seed(13);
  const int64_t E = 8, NH = 2, B = 2, T = 4, S = 5;
  nn::TransformerLayerOptions o;
  o.dim_feedforward = 16;
  o.batch_first = true;
  o.dropout = 0;
  TransformerDecoder dec(TransformerDecoderLayer(E, NH, o), 2, nullptr, nn::LayerClone::Fresh);
  Tensor tgt = randn({B, T, E}), mem = randn({B, S, E});
  Tensor mem_pad =
      tensor(std::vector<bool>{false, false, false, true, true, false, false, false, false, false},
             {B, S});
  dec.forward(tgt, mem, Transformer::generate_square_subsequent_mask(T), Tensor(), Tensor(),
              mem_pad);
  for (const Tensor& w : dec.last_self_attn_weights())
    REQUIRE_FALSE(w.defined());  // off by default

  dec.set_need_weights(true);
  Tensor out = dec.forward(tgt, mem, Transformer::generate_square_subsequent_mask(T), Tensor(),
                           Tensor(), mem_pad);
  auto self_w = dec.last_self_attn_weights(), cross_w = dec.last_cross_attn_weights();
  REQUIRE(self_w.size() == 2);
  REQUIRE(cross_w.size() == 2);
  for (int l = 0; l < 2; ++l) {
    REQUIRE(self_w[l].shape() == Shape{B, T, T});
    REQUIRE(cross_w[l].shape() == Shape{B, T, S});
    REQUIRE_FALSE(self_w[l].requires_grad());  // kept detached
    std::vector<double> sw = values(self_w[l]), cw = values(cross_w[l]);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < T; ++i) {
        double rs = 0, rc = 0;
        for (int64_t j = 0; j < T; ++j) {
          rs += sw[(b * T + i) * T + j];
          if (j > i) REQUIRE(sw[(b * T + i) * T + j] == 0.0);  // causal
        }
        for (int64_t j = 0; j < S; ++j) rc += cw[(b * T + i) * S + j];
        REQUIRE(rs == Approx(1.0));
        REQUIRE(rc == Approx(1.0));
        if (b == 0) REQUIRE(cw[i * S + 3] == 0.0);  // padded memory keys
      }
  }
  // Layer 0's self-attention weights are the weights its MultiheadAttention returns.
  auto l0 = dec.layer(0);
  Tensor ref =
      l0->self_attn
          ->forward(tgt, tgt, tgt, Tensor(), true, Transformer::generate_square_subsequent_mask(T))
          .second;
  tgt::require_close(self_w[0], ref, 1e-6, 1e-5, "layer 0 self weights");
  // Per head, and encoder layers too.
  dec.set_need_weights(true, false);
  dec.forward(tgt, mem);
  REQUIRE(dec.last_cross_attn_weights()[1].shape() == Shape{B, NH, T, S});
  o.need_weights = true;
  TransformerEncoderLayer enc(E, NH, o);
  enc.forward(tgt);
  REQUIRE(enc.last_self_attn_weights().shape() == Shape{B, T, T});
  enc.options.need_weights = false;
  enc.forward(tgt);
  REQUIRE_FALSE(enc.last_self_attn_weights().defined());  // no stale weights
}

TEST_CASE("generate_square_subsequent_mask: 0 on and below the diagonal, -inf above",
          "[transformer]") {
  Tensor m = Transformer::generate_square_subsequent_mask(3);
  REQUIRE(m.dtype() == kFloat32);
  REQUIRE(m.shape() == Shape{3, 3});
  const double inf = INFINITY;
  REQUIRE(values(m) == std::vector<double>{0, -inf, -inf, 0, 0, -inf, 0, 0, 0});
  REQUIRE(Transformer::generate_square_subsequent_mask(2, kFloat64).dtype() == kFloat64);
  REQUIRE(Transformer::generate_square_subsequent_mask(0).shape() == Shape{0, 0});
  REQUIRE_ERROR(Transformer::generate_square_subsequent_mask(3, kBool),
                "Transformer.generate_square_subsequent_mask: dtype must be float32 or float64");
  REQUIRE_ERROR(Transformer::generate_square_subsequent_mask(-1), "size must be >= 0, got -1");
}

TEST_CASE("Transformer: PyTorch's parameter names, xavier reset, stack copies", "[transformer]") {
  manual_seed(14);
  nn::TransformerOptions o;
  o.d_model = 8;
  o.nhead = 2;
  o.num_encoder_layers = 2;
  o.num_decoder_layers = 1;
  o.dim_feedforward = 16;
  Transformer t(o);
  std::vector<std::string> names;
  for (auto& [n, p] : t.named_parameters()) names.push_back(n);
  REQUIRE(names.size() == 2 * 12 + 2 + 18 + 2);
  REQUIRE(names[0] == "encoder.layers.0.self_attn.in_proj_weight");
  REQUIRE(names[4] == "encoder.layers.0.linear1.weight");
  REQUIRE(names[8] == "encoder.layers.0.norm1.weight");
  REQUIRE(names[12] == "encoder.layers.1.self_attn.in_proj_weight");
  REQUIRE(names[24] == "encoder.norm.weight");
  REQUIRE(names[26] == "decoder.layers.0.self_attn.in_proj_weight");
  REQUIRE(names[30] == "decoder.layers.0.multihead_attn.in_proj_weight");
  REQUIRE(names[42] == "decoder.layers.0.norm3.weight");
  REQUIRE(names.back() == "decoder.norm.bias");
  // Every >1-D parameter was redrawn by xavier_uniform_: |w| <= sqrt(6 / (fan_in + fan_out)).
  for (auto& [n, p] : t.named_parameters()) {
    if (p.dim() < 2) continue;
    double bound = std::sqrt(6.0 / double(p.size(0) + p.size(1))), mx = 0;
    for (double v : values(p)) mx = std::max(mx, std::fabs(v));
    INFO(n);
    REQUIRE(mx <= bound);
    REQUIRE(mx > 0.7 * bound);
  }
  // After the reset the two encoder layers differ in their matrices but, as in PyTorch (deep
  // copies), share their initial biases.
  auto l0 = t.encoder->layer(0), l1 = t.encoder->layer(1);
  REQUIRE(values(l0->linear1->weight) != values(l1->linear1->weight));
  REQUIRE(values(l0->linear1->bias) == values(l1->linear1->bias));
  // A stack of copies starts with identical layers (and the given layer's dtype); Fresh does not.
  TransformerEncoderLayer proto(8, 2, 16, 0.0);
  proto.to(kFloat64);
  TransformerEncoder copies(proto, 2), fresh(proto, 2, nullptr, nn::LayerClone::Fresh);
  REQUIRE(copies.layer(1)->linear2->weight.dtype() == kFloat64);
  REQUIRE(values(copies.layer(0)->linear2->weight) == values(proto.linear2->weight));
  REQUIRE(values(copies.layer(1)->linear2->weight) == values(proto.linear2->weight));
  REQUIRE_FALSE(
      copies.layer(1)->linear2->weight.same(proto.linear2->weight));  // copies, not shared
  REQUIRE(values(fresh.layer(0)->linear2->weight) != values(fresh.layer(1)->linear2->weight));
  REQUIRE(copies.named_parameters().size() == 24);  // no `norm`, the prototype not registered
  REQUIRE(proto.repr() ==
          "TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0, "
          "activation=relu)");
  std::vector<std::string> kids;
  for (auto& [n, c] : proto.named_children()) kids.push_back(n);
  REQUIRE(kids == std::vector<std::string>{"self_attn", "linear1", "dropout", "linear2", "norm1",
                                           "norm2", "dropout1", "dropout2"});
  // Defaults are PyTorch's.
  nn::TransformerOptions d;
  REQUIRE(
      (d.d_model == 512 && d.nhead == 8 && d.num_encoder_layers == 6 && d.num_decoder_layers == 6));
  REQUIRE((d.dim_feedforward == 2048 && d.dropout == 0.1 && d.activation == "relu" &&
           d.layer_norm_eps == 1e-5));
  REQUIRE((!d.batch_first && !d.norm_first));
}

TEST_CASE("Transformer: custom encoder, unbatched inputs, structures and weights through the model",
          "[transformer]") {
  manual_seed(16);
  nn::TransformerLayerOptions lo;
  lo.dim_feedforward = 16;
  lo.dropout = 0;
  auto custom =
      std::make_shared<TransformerEncoder>(TransformerEncoderLayer(8, 2, lo), 3);  // no final norm
  nn::TransformerOptions o;
  o.d_model = 8;
  o.nhead = 2;
  o.num_decoder_layers = 1;
  o.dim_feedforward = 16;
  o.dropout = 0;
  o.custom_encoder = custom;
  o.decoder_self_attn_structure = AttentionMask::causal();
  o.need_weights = true;
  Transformer t(o);
  REQUIRE(t.encoder.get() == custom.get());
  REQUIRE(t.encoder->num_layers == 3);
  REQUIRE_FALSE(t.encoder->norm);
  double bound = std::sqrt(6.0 / 32.0), mx = 0;  // the custom encoder was xavier-reset too
  for (double v : values(custom->layer(2)->self_attn->in_proj_weight))
    mx = std::max(mx, std::fabs(v));
  REQUIRE(mx <= bound);
  // Unbatched (S, E) / (T, E) in and out; the decoder's structural causal mask equals an explicit
  // one.
  Tensor src = randn({5, 8}), tgt = randn({4, 8});
  Tensor a = t.forward(src, tgt);
  REQUIRE(a.shape() == Shape{4, 8});
  REQUIRE(t.encoder->last_self_attn_weights().size() == 3);
  REQUIRE(t.encoder->last_self_attn_weights()[0].shape() == Shape{5, 5});
  Tensor sw = t.decoder->last_self_attn_weights()[0];
  REQUIRE(sw.shape() == Shape{4, 4});
  REQUIRE(values(sw)[1] == 0.0);  // row 0 cannot see key 1
  REQUIRE(t.decoder->last_cross_attn_weights()[0].shape() == Shape{4, 5});
  t.decoder->layer(0)->self_attn->options.structure = AttentionMask();
  Tensor b = t.forward(src, tgt, Tensor(), Transformer::generate_square_subsequent_mask(4));
  tgt::require_close(a, b, 1e-6, 1e-5, "structural causal vs tgt_mask");
  t.set_need_weights(false);
  t.forward(src, tgt);
  REQUIRE_FALSE(t.decoder->last_cross_attn_weights()[0].defined());
}

// TransformerOptions is a TransformerLayerOptions: every built layer takes that part as it is
// (num_kv_heads and average_attn_weights included); the shared self_attn_structure meets each
// stack's own.
TEST_CASE("Transformer: built layers take the options' layer part", "[transformer]") {
  nn::TransformerOptions o;
  o.d_model = 8;
  o.nhead = 4;
  o.num_encoder_layers = o.num_decoder_layers = 1;
  o.dim_feedforward = 12;
  o.dropout = 0.25;
  o.activation = "gelu";
  o.layer_norm_eps = 1e-3;
  o.batch_first = o.norm_first = o.need_weights = true;
  o.average_attn_weights = false;
  o.num_kv_heads = 2;
  o.self_attn_structure = AttentionMask::local(2, 0);
  o.decoder_self_attn_structure = AttentionMask::causal();
  Transformer t(o);
  for (const nn::TransformerLayerOptions* lo :
       {&t.encoder->layer(0)->options, &t.decoder->layer(0)->options}) {
    REQUIRE(lo->dim_feedforward == 12);
    REQUIRE(lo->dropout == 0.25);
    REQUIRE(lo->activation == "gelu");
    REQUIRE(lo->layer_norm_eps == 1e-3);
    REQUIRE((lo->batch_first && lo->norm_first && lo->need_weights));
    REQUIRE_FALSE(lo->average_attn_weights);
    REQUIRE(lo->num_kv_heads == 2);
  }
  REQUIRE(t.encoder->layer(0)->self_attn->num_kv_heads == 2);
  REQUIRE(t.encoder->layer(0)->options.self_attn_structure.name() ==
          AttentionMask::local(2, 0).name());
  REQUIRE(t.decoder->layer(0)->options.self_attn_structure.name() ==
          (AttentionMask::local(2, 0) & AttentionMask::causal()).name());
}

TEST_CASE("Transformer layers run forward hooks and keep training mode semantics",
          "[transformer]") {
  manual_seed(15);
  TransformerEncoderLayer proto(8, 2, 16, 0.0);
  TransformerEncoder enc(proto, 2, std::make_shared<nn::LayerNorm>(8));
  int calls = 0;
  Shape seen;
  enc.layer(1)->register_forward_hook(
      [&](nn::Module&, const std::vector<Tensor>& in, const Tensor& out) {
        ++calls;
        seen = out.shape();
        REQUIRE(in.size() == 1);
      });
  int stack_calls = 0;
  enc.register_forward_hook(
      [&](nn::Module&, const std::vector<Tensor>&, const Tensor&) { ++stack_calls; });
  Tensor x = randn({3, 2, 8});
  enc.forward(x);
  REQUIRE(calls == 1);
  REQUIRE(stack_calls == 1);
  REQUIRE(seen == Shape{3, 2, 8});
  // As a TensorModule an encoder layer chains in a Sequential; unbatched (T, E) works.
  REQUIRE(enc.layer(0)->forward(randn({3, 8})).shape() == Shape{3, 8});
  // Dropout is active in training mode and off in eval mode.
  TransformerEncoderLayer drop(8, 2, 16, 0.5);
  Tensor a = drop.forward(x), b = drop.forward(x);
  REQUIRE(values(a) != values(b));
  drop.eval();
  REQUIRE(values(drop.forward(x)) == values(drop.forward(x)));
}

TEST_CASE("Transformer errors name the module and the shapes", "[transformer]") {
  REQUIRE_ERROR(TransformerEncoderLayer(10, 3),
                "TransformerEncoderLayer: d_model (10) must be a positive multiple of nhead (3)");
  nn::TransformerLayerOptions bad;
  bad.activation = "tanh";
  REQUIRE_ERROR(TransformerDecoderLayer(8, 2, bad),
                "TransformerDecoderLayer: activation should be relu/gelu, not \"tanh\"");
  TransformerEncoderLayer enc(8, 2, 16);
  REQUIRE_ERROR(enc.forward(zeros({5, 2, 7})),
                "TransformerEncoderLayer: src (5,2,7) must be (T, B, E) with batch_first=false or "
                "unbatched (T, E), "
                "with E = d_model = 8");
  REQUIRE_ERROR(
      enc.forward(zeros({5, 2, 8}, kFloat64)),
      "TransformerEncoderLayer: src (5,2,8) is float64 but the layer's parameters are float32");
  REQUIRE_ERROR(enc.forward(zeros({5, 2, 8}), Tensor(), zeros({2, 4}, kBool)),
                "TransformerEncoderLayer.self_attn: multihead_attention: key_padding_mask (2,4) "
                "must be (B, S) = (2, 5)");
  REQUIRE_ERROR(enc.forward(zeros({5, 2, 8}), zeros({4, 4}, kBool)),
                "TransformerEncoderLayer.self_attn: multihead_attention: attn_mask (4,4) must be "
                "(T, S) = (5, 5)");
  TransformerDecoderLayer dec(8, 2, 16);
  REQUIRE_ERROR(dec.forward(zeros({4, 2, 8}), zeros({5, 3, 8})),
                "TransformerDecoderLayer: tgt (4,2,8) and memory (5,3,8) must both be (T, B, E) "
                "with batch_first=false "
                "with the same B");
  REQUIRE_ERROR(dec.forward(zeros({4, 2, 8}), zeros({5, 2, 8}), Tensor(), zeros({4, 4}, kBool)),
                "TransformerDecoderLayer.multihead_attn: multihead_attention: attn_mask (4,4) must "
                "be (T, S) = (4, 5)");
  REQUIRE_ERROR(TransformerEncoder(enc, 0), "TransformerEncoder: num_layers must be >= 1, got 0");
  nn::TransformerOptions o;
  o.d_model = 8;
  o.nhead = 2;
  o.num_encoder_layers = o.num_decoder_layers = 1;
  o.dim_feedforward = 8;
  Transformer t(o);
  REQUIRE_ERROR(t.forward(zeros({5, 2, 8}), zeros({4, 3, 8})),
                "Transformer: the batch number of src (5,2,8) and tgt (4,3,8) must be equal");
  REQUIRE_ERROR(t.forward(zeros({5, 2, 8}), zeros({4, 2, 6})),
                "Transformer: the feature number of src (5,2,8) and tgt (4,2,6) must be equal to "
                "d_model = 8");
}

// ---- end to end
// ----------------------------------------------------------------------------------
namespace {
// An encoder-decoder that reverses digit sequences: shared token embedding (V = 10 digits + BOS),
// sinusoidal positions, a batch-first Transformer and an output Linear.
struct Reverser {
  static constexpr int64_t V = 11, BOS = 10, C = 32;
  std::shared_ptr<nn::Embedding> emb = std::make_shared<nn::Embedding>(V, C);
  std::shared_ptr<nn::PositionalEncoding> pos = std::make_shared<nn::PositionalEncoding>(C, 16);
  std::shared_ptr<Transformer> tf;
  std::shared_ptr<nn::Linear> head = std::make_shared<nn::Linear>(C, V);
  explicit Reverser(int64_t layers) {
    nn::TransformerOptions o;
    o.d_model = C;
    o.nhead = 4;
    o.num_encoder_layers = o.num_decoder_layers = layers;
    o.dim_feedforward = 64;
    o.dropout = 0.0;
    o.batch_first = true;
    tf = std::make_shared<Transformer>(o);
  }
  std::vector<Tensor> parameters() const {
    std::vector<Tensor> ps;
    for (auto m : std::vector<nn::ModulePtr>{emb, tf, head})
      for (const Tensor& p : m->parameters()) ps.push_back(p);
    return ps;
  }
  // src (B, L), tgt_in (B, L) int64 -> logits (B, L, V).
  Tensor forward(const Tensor& src, const Tensor& tgt_in) {
    const int64_t L = tgt_in.size(1);
    Tensor s = pos->forward(emb->forward(src));
    Tensor t = pos->forward(emb->forward(tgt_in));
    return head->forward(
        tf->forward(s, t, Tensor(), Transformer::generate_square_subsequent_mask(L)));
  }
};

// Random digit sequences (B, L), their reversals, and the teacher-forcing decoder inputs.
void make_batch(int64_t B, int64_t L, Tensor& src, Tensor& tgt_in, Tensor& tgt_out) {
  src = randint(0, 10, {B, L});
  std::vector<int64_t> s = src.to_vector<int64_t>(), in(B * L), out(B * L);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < L; ++t) {
      out[b * L + t] = s[b * L + (L - 1 - t)];
      in[b * L + t] = t == 0 ? Reverser::BOS : out[b * L + t - 1];
    }
  tgt_in = tensor(in, {B, L});
  tgt_out = tensor(out, {B, L});
}

double accuracy(const Tensor& logits, const Tensor& target) {
  std::vector<int64_t> pred = argmax(logits, -1).to_vector<int64_t>(),
                       want = target.to_vector<int64_t>();
  int64_t ok = 0;
  for (size_t i = 0; i < pred.size(); ++i) ok += pred[i] == want[i];
  return double(ok) / double(pred.size());
}
}  // namespace

TEST_CASE("end to end: a 2+2-layer Transformer learns to reverse sequences", "[transformer][e2e]") {
  const auto t0 = std::chrono::steady_clock::now();
  manual_seed(2024);
  // 200 steps of 64 fresh sequences, AdamW with a linearly decaying LR: 100 % held-out accuracy
  // on seeds 1-8 and 2024 (150 steps already give >= 99.2 %).
  const int64_t L = 6, B = 64, kSteps = 200;
  Reverser model(2);
  nn::AdamWOptions ao(4e-3);
  ao.weight_decay = 0.01;
  nn::AdamW opt(model.parameters(), ao);
  Tensor src, tin, tout;
  double loss0 = 0, loss = 0;
  for (int64_t step = 0; step < kSteps; ++step) {
    opt.param_groups()[0].set_lr(ao.lr * (1.0 - double(step) / double(kSteps)));  // linear decay
    make_batch(B, L, src, tin, tout);
    Tensor logits = model.forward(src, tin);
    Tensor l = cross_entropy(reshape(logits, {B * L, Reverser::V}), reshape(tout, {B * L}));
    opt.zero_grad();
    l.backward();
    opt.step();
    loss = l.item<double>();
    if (step == 0) loss0 = loss;
  }
  // Held-out sequences (fresh draws), teacher-forcing token accuracy, in eval mode without grad.
  model.tf->eval();
  NoGradGuard ng;
  make_batch(256, L, src, tin, tout);
  const double acc = accuracy(model.forward(src, tin), tout);
  // Greedy decoding, one token at a time from BOS (reported, and checked loosely).
  std::vector<int64_t> dec(256, Reverser::BOS);
  for (int64_t t = 1; t <= L; ++t) {
    Tensor logits = model.forward(src, tensor(dec, {256, t}));
    std::vector<int64_t> next = argmax(narrow(logits, 1, t - 1, 1), -1).to_vector<int64_t>(), grown;
    for (int64_t b = 0; b < 256; ++b) {
      grown.insert(grown.end(), dec.begin() + b * t, dec.begin() + (b + 1) * t);
      grown.push_back(next[b]);
    }
    dec = grown;
  }
  const std::vector<int64_t> want = tout.to_vector<int64_t>();
  int64_t greedy_ok = 0;
  for (int64_t b = 0; b < 256; ++b)
    for (int64_t t = 0; t < L; ++t) greedy_ok += dec[b * (L + 1) + t + 1] == want[b * L + t];
  const double greedy = double(greedy_ok) / double(256 * L);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO("loss " << loss0 << " -> " << loss << ", held-out teacher-forcing accuracy " << acc
               << ", greedy " << greedy << ", " << secs << " s");
  REQUIRE(loss0 > 2.0);
  REQUIRE(loss < 0.05);
  REQUIRE(acc >= 0.99);
  REQUIRE(greedy >= 0.97);
}

TEST_CASE("Transformer forwards take keyword-style option structs, equal to the positional form",
          "[transformer]") {
  manual_seed(21);
  nn::TransformerOptions o;
  o.d_model = 8;
  o.nhead = 2;
  o.num_encoder_layers = 2;
  o.num_decoder_layers = 1;
  o.dim_feedforward = 16;
  o.dropout = 0;
  o.batch_first = true;
  Transformer t(o);
  Tensor src = randn({2, 5, 8}), tgt = randn({2, 4, 8});
  Tensor src_pad = tensor(std::vector<bool>{false, false, false, false, false,  //
                                            false, false, false, true, true},
                          {2, 5});
  Tensor tgt_mask = Transformer::generate_square_subsequent_mask(4);

  nn::EncoderForwardOptions ef;
  ef.src_key_padding_mask = src_pad;
  ef.is_causal = true;
  Tensor e_kw = t.encoder->forward(src, ef);
  Tensor e_pos = t.encoder->forward(src, Tensor(), src_pad, true);
  REQUIRE(values(e_kw) == values(e_pos));
  REQUIRE(values(t.encoder->layer(0)->forward(src, ef)) ==
          values(t.encoder->layer(0)->forward(src, Tensor(), src_pad, true)));
  // Causal really applied: differs from the non-causal encoding.
  REQUIRE(values(e_kw) != values(t.encoder->forward(src, Tensor(), src_pad)));

  nn::DecoderForwardOptions df;
  df.tgt_mask = tgt_mask;
  df.memory_key_padding_mask = src_pad;
  REQUIRE(values(t.decoder->forward(tgt, e_kw, df)) ==
          values(t.decoder->forward(tgt, e_kw, tgt_mask, Tensor(), Tensor(), src_pad)));
  REQUIRE(values(t.decoder->layer(0)->forward(tgt, e_kw, df)) ==
          values(t.decoder->layer(0)->forward(tgt, e_kw, tgt_mask, Tensor(), Tensor(), src_pad)));

  nn::TransformerForwardOptions tf;
  tf.tgt_mask = tgt_mask;
  tf.src_key_padding_mask = src_pad;
  tf.memory_key_padding_mask = src_pad;
  Tensor kw = t.forward(src, tgt, tf);
  Tensor pos = t.forward(src, tgt, Tensor(), tgt_mask, Tensor(), src_pad, Tensor(), src_pad);
  REQUIRE(kw.shape() == Shape{2, 4, 8});
  REQUIRE(values(kw) == values(pos));
}
