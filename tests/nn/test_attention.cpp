// tests/nn/test_attention.cpp — MultiheadAttention: parity with torch.nn.MultiheadAttention on
// every configuration in tests/fixtures/mha/<name>.safetensors (outputs, weights, gradients of
// inputs and every parameter; float64 to 1e-10, float32 to 1e-5), float64 gradchecks of inputs and
// parameters for the mask variants (incl. local / blocked / fully masked rows, which PyTorch cannot
// express without NaN), parameter names and initialisation, errors, and the seed's layout.
#include "fixtures.hpp"
#include "helpers.hpp"

#include "nn/attention.hpp"

#include <map>

using namespace tg;
using nn::MultiheadAttention;

namespace {
// One file per configuration: tests/fixtures/mha/<name>.safetensors (tools/make_mha_fixtures.py).
tgt::Fixture fixture(const std::string& name) { return tgt::Fixture("mha/" + name); }
std::map<std::string, std::string> read_config(const std::string& name) {
  return fixture(name).metadata();
}
std::vector<std::string> config_names() { return tgt::fixture_index("mha"); }
Tensor fx(const std::string& cfg, const std::string& tensor) { return fixture(cfg).tensor(tensor); }
bool exists(const std::string& cfg, const std::string& tensor) { return fixture(cfg).has(tensor); }
std::vector<std::string> split(const std::string& s, char sep) { return tgt::split(s, sep); }

void run_parity(const std::string& name, DType dt, double atol, double rtol) {
  auto cfg = read_config(name);
  auto I = [&](const char* k) { return std::stoll(cfg.at(k)); };
  nn::MultiheadAttentionOptions o;
  o.bias = I("bias");
  o.add_bias_kv = I("add_bias_kv");
  o.add_zero_attn = I("add_zero_attn");
  o.kdim = I("kdim");
  o.vdim = I("vdim");
  o.batch_first = I("batch_first");
  MultiheadAttention mha(I("embed_dim"), I("num_heads"), o);
  mha.to(dt);
  nn::StateDict sd;
  for (const std::string& p : split(cfg.at("params"), ',')) sd.insert(p, fx(name, p).to(dt));
  mha.load_state_dict(sd);
  Tensor q = fx(name, "query").to(dt).detach().requires_grad_();
  Tensor k = fx(name, "key").to(dt).detach().requires_grad_();
  Tensor v = fx(name, "value").to(dt).detach().requires_grad_();
  nn::MHAForwardOptions f;
  if (exists(name, "key_padding_mask")) f.key_padding_mask = fx(name, "key_padding_mask");
  if (exists(name, "attn_mask")) {
    f.attn_mask = fx(name, "attn_mask");
    if (f.attn_mask.dtype() != kBool) f.attn_mask = f.attn_mask.to(dt);
  }
  f.need_weights = I("need_weights");
  f.average_attn_weights = I("average_attn_weights");
  auto [out, w] = mha.forward(q, k, v, f);
  const std::string what = fmt::format("{} ({})", name, dtype_name(dt));
  tgt::require_close(out, fx(name, "out"), atol, rtol, what + " out");
  if (f.need_weights)
    tgt::require_close(w, fx(name, "weights"), atol, rtol, what + " weights");
  else
    REQUIRE_FALSE(w.defined());
  out.backward(fx(name, "d_out").to(dt));
  tgt::require_close(q.grad(), fx(name, "d_query"), atol, rtol, what + " d_query");
  tgt::require_close(k.grad(), fx(name, "d_key"), atol, rtol, what + " d_key");
  tgt::require_close(v.grad(), fx(name, "d_value"), atol, rtol, what + " d_value");
  for (auto& [pname, p] : mha.named_parameters())
    tgt::require_close(p.grad(), fx(name, "d_" + pname), atol, rtol, what + " d_" + pname);
  if (cfg.count("same_qkv") && I("same_qkv")) {
    // mha(x, x, x): one tensor as query, key and value takes the packed in-projection and
    // attention; the gradient of x is d_query + d_key + d_value.
    mha.zero_grad(true);
    Tensor x = fx(name, "query").to(dt).detach().requires_grad_();
    auto [xout, xw] = mha.forward(x, x, x, f);
    tgt::require_close(xout, fx(name, "out"), atol, rtol, what + " packed out");
    if (f.need_weights)
      tgt::require_close(xw, fx(name, "weights"), atol, rtol, what + " packed weights");
    xout.backward(fx(name, "d_out").to(dt));
    Tensor dx = fx(name, "d_query") + fx(name, "d_key") + fx(name, "d_value");
    tgt::require_close(x.grad(), dx, atol, rtol, what + " packed d_x");
    for (auto& [pname, p] : mha.named_parameters())
      tgt::require_close(p.grad(), fx(name, "d_" + pname), atol, rtol, what + " packed d_" + pname);
  }
}
}  // namespace

TEST_CASE("MultiheadAttention matches PyTorch on every fixture configuration", "[mha][parity]") {
  std::vector<std::string> names = config_names();
  REQUIRE(names.size() >= 25);
  for (const std::string& n : names) {
    SECTION(n + " float64") { run_parity(n, kFloat64, 1e-10, 1e-10); }
    SECTION(n + " float32") { run_parity(n, kFloat32, 1e-5, 1e-5); }
  }
}

TEST_CASE("MultiheadAttention parameters: PyTorch names, shapes and init", "[mha]") {
  manual_seed(0);
  MultiheadAttention a(8, 2);
  std::vector<std::string> names;
  for (auto& [n, p] : a.named_parameters()) names.push_back(n);
  REQUIRE(names == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                            "out_proj.bias"});
  REQUIRE(a.in_proj_weight.shape() == Shape{24, 8});
  // xavier_uniform over the packed (3E, E) matrix: bound sqrt(6 / (E + 3E)).
  double bound = std::sqrt(6.0 / 32.0), mx = 0;
  for (float x : a.in_proj_weight.to_vector<float>()) mx = std::max(mx, std::fabs(double(x)));
  REQUIRE(mx <= bound);
  REQUIRE(mx > 0.8 * bound);
  for (float x : a.in_proj_bias.to_vector<float>()) REQUIRE(x == 0.0f);
  for (float x : a.out_proj->bias.to_vector<float>()) REQUIRE(x == 0.0f);
  nn::MultiheadAttentionOptions o;
  o.kdim = 5;
  o.vdim = 3;
  o.add_bias_kv = true;
  MultiheadAttention b(8, 2, o);
  names.clear();
  for (auto& [n, p] : b.named_parameters()) names.push_back(n);
  REQUIRE(names == std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight",
                                            "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
                                            "out_proj.bias"});
  REQUIRE(b.k_proj_weight.shape() == Shape{8, 5});
  REQUIRE(b.bias_k.shape() == Shape{1, 1, 8});
}

TEST_CASE("MultiheadAttention gradchecks: inputs and parameters for every mask variant", "[mha]") {
  manual_seed(5);
  const int64_t E = 4, NH = 2, B = 2, T = 5;
  struct Case {
    std::string name;
    nn::MultiheadAttentionOptions opts;
    int64_t S;
    bool padding;  // key padding that, with a window, leaves rows fully masked
  };
  auto opt = [](AttentionMask m) {
    nn::MultiheadAttentionOptions o;
    o.batch_first = true;
    o.structure = m;
    return o;
  };
  std::vector<Case> cases = {
      {"none", opt({}), T, false},
      {"causal", opt(AttentionMask::causal()), T, false},
      {"local(1,1)", opt(AttentionMask::local(1, 1)), T, false},
      {"local(0,0)", opt(AttentionMask::local(0, 0)), T, false},
      {"local(9,9) >= T", opt(AttentionMask::local(9, 9)), T, false},
      {"causal local(2,0)", opt(AttentionMask::local(2, 0)), T, false},
      {"blocked(2) not dividing T", opt(AttentionMask::blocked(2)), T, false},
      {"blocked(2) causal, look-back", opt(AttentionMask::blocked(2, {1, 0, true})), T, false},
      {"padding + window: fully masked rows", opt(AttentionMask::local(1, 0)), T, true},
      {"cross T != S", opt({}), 3, false},
  };
  for (auto& c : cases) {
    MultiheadAttention m(E, NH, c.opts);
    m.to(kFloat64);
    Tensor q = tgt::leaf({B, T, E}), k = tgt::leaf({B, c.S, E}), v = tgt::leaf({B, c.S, E});
    Tensor kpm;
    if (c.padding)
      kpm = tensor(
          std::vector<bool>{false, false, true, true, true, false, false, false, false, false},
          {B, T});
    std::vector<Tensor> inputs{q, k, v};
    for (Tensor& p : m.parameters()) inputs.push_back(p);
    tgt::check_grad(
        [&](const std::vector<Tensor>& in) {
          nn::MHAForwardOptions f;
          f.key_padding_mask = kpm;
          return m.forward(in[0], in[1], in[2], f).first;
        },
        inputs, "mha " + c.name);
  }
}

TEST_CASE("MultiheadAttention gradchecks: PyTorch's options and mask forms", "[mha]") {
  manual_seed(8);
  const int64_t E = 4, NH = 2, B = 2, T = 4, S = 3;
  struct Case {
    std::string name;
    nn::MultiheadAttentionOptions opts;
    Shape q, k, v;  // input shapes in the module's layout
    nn::MHAForwardOptions f;
  };
  nn::MultiheadAttentionOptions seq_first, kv, bias_kv, zero_attn;
  kv.kdim = 3;
  kv.vdim = 2;
  bias_kv.add_bias_kv = true;
  zero_attn.add_zero_attn = true;
  nn::MHAForwardOptions none, pad, bool_mask, float_mask, per_head;
  pad.key_padding_mask = tensor(std::vector<bool>{false, false, true, false, true, true}, {B, S});
  bool_mask.attn_mask = tensor(std::vector<bool>{false, true, true, false, false, true, false,
                                                 false, false, true, false, false},
                               {T, S});
  float_mask.attn_mask =
      tensor(std::vector<double>{0, -1.5, -INFINITY, 0.5, 0, 0, 2, 0, -INFINITY, 0, 0, 1}, {T, S});
  per_head.average_attn_weights = false;
  std::vector<Case> cases = {
      {"seq-first cross-attention", seq_first, {T, B, E}, {S, B, E}, {S, B, E}, none},
      {"key padding", seq_first, {T, B, E}, {S, B, E}, {S, B, E}, pad},
      {"bool attn_mask (True = blocked)", seq_first, {T, B, E}, {S, B, E}, {S, B, E}, bool_mask},
      {"float attn_mask (added)", seq_first, {T, B, E}, {S, B, E}, {S, B, E}, float_mask},
      {"kdim 3, vdim 2", kv, {T, B, E}, {S, B, 3}, {S, B, 2}, none},
      {"add_bias_kv + padding", bias_kv, {T, B, E}, {S, B, E}, {S, B, E}, pad},
      {"add_zero_attn + bool mask", zero_attn, {T, B, E}, {S, B, E}, {S, B, E}, bool_mask},
      {"unbatched", seq_first, {T, E}, {S, E}, {S, E}, none},
      {"per-head weights", seq_first, {T, B, E}, {S, B, E}, {S, B, E}, per_head},
  };
  for (auto& c : cases) {
    MultiheadAttention m(E, NH, c.opts);
    m.to(kFloat64);
    std::vector<Tensor> inputs{tgt::leaf(c.q), tgt::leaf(c.k), tgt::leaf(c.v)};
    for (Tensor& p : m.parameters()) inputs.push_back(p);
    const nn::MHAForwardOptions f = c.f;
    tgt::check_grad(
        [&](const std::vector<Tensor>& in) { return m.forward(in[0], in[1], in[2], f).first; },
        inputs, "mha " + c.name);
  }
  // Blocked windows with a block size that divides T, in the module.
  nn::MultiheadAttentionOptions blk;
  blk.structure = AttentionMask::blocked(2);
  MultiheadAttention m(E, NH, blk);
  m.to(kFloat64);
  std::vector<Tensor> inputs{tgt::leaf({T, B, E})};
  for (Tensor& p : m.parameters()) inputs.push_back(p);
  tgt::check_grad(
      [&](const std::vector<Tensor>& in) { return m.forward(in[0], in[0], in[0]).first; }, inputs,
      "mha blocked(2), T = 4");
}

TEST_CASE("fully masked rows give zeros, never NaN, with weights", "[mha]") {
  manual_seed(6);
  nn::MultiheadAttentionOptions o;
  o.batch_first = true;
  o.structure = AttentionMask::local(1, 0);
  MultiheadAttention m(4, 2, o);
  Tensor x = randn({1, 4, 4}).requires_grad_();
  Tensor kpm = tensor(std::vector<bool>{false, true, true, true}, {1, 4});  // rows 2, 3 see no key
  nn::MHAForwardOptions f;
  f.key_padding_mask = kpm;
  auto [out, w] = m.forward(x, x, x, f);
  for (float v : w.to_vector<float>()) REQUIRE(std::isfinite(v));
  std::vector<float> wv = w.to_vector<float>();
  for (int j = 0; j < 4; ++j) REQUIRE(wv[2 * 4 + j] == 0.0f);
  out.sum().backward();
  for (float g : x.grad().to_vector<float>()) REQUIRE(std::isfinite(g));
}

TEST_CASE("MultiheadAttention errors speak the user's layout", "[mha]") {
  REQUIRE_ERROR(MultiheadAttention(10, 3),
                "MultiheadAttention: embed_dim 10 must be divisible by num_heads 3");
  MultiheadAttention m(8, 2);
  REQUIRE_ERROR(m.forward(zeros({4, 10}), zeros({4, 10}), zeros({4, 10})),
                "multihead_attention: query must be (T, B, E) with batch_first=false or unbatched "
                "(T, E) with E = 8, got (4,10)");
  REQUIRE_ERROR(
      m.forward(zeros({5, 2, 8}), zeros({5, 2, 8}), zeros({5, 2, 8}), zeros({4, 9}, kBool)),
      "multihead_attention: key_padding_mask (4,9) must be (B, S) = (2, 5)");
  REQUIRE_ERROR(
      m.forward(zeros({5, 2, 8}), zeros({5, 2, 8}), zeros({5, 2, 8}), Tensor(), true,
                zeros({3, 5}, kBool)),
      "multihead_attention: attn_mask (3,5) must be (T, S) = (5, 5) or (B·NH, T, S) = (4, 5, 5)");
  REQUIRE_ERROR(
      m.forward(zeros({5, 2, 8}, kFloat64), zeros({5, 2, 8}), zeros({5, 2, 8})),
      "multihead_attention: query (5,2,8) is float64 but the module's parameters are float32");
  REQUIRE_ERROR(m.forward(zeros({5, 2, 8}), zeros({4, 2, 8}), zeros({5, 2, 8})),
                "disagree on B or S");
}

TEST_CASE("the seed's MultiHeadAttention layout (W_q, W_k, W_v, W_o - mask == 0 blocked)",
          "[mha]") {
  manual_seed(7);
  nn::SeedMultiHeadAttention m(4, 2);
  std::vector<std::string> names;
  for (auto& [n, p] : m.named_parameters()) names.push_back(n);
  REQUIRE(names == std::vector<std::string>{"W_q.weight", "W_q.bias", "W_k.weight", "W_k.bias",
                                            "W_v.weight", "W_v.bias", "W_o.weight", "W_o.bias"});
  m.to(kFloat64);
  Tensor x = tgt::leaf({2, 3, 4});
  Tensor causal = tensor(std::vector<double>{1, 0, 0, 1, 1, 0, 1, 1, 1}, {3, 3});
  auto [out, w] = m.forward(x, x, x, causal);
  REQUIRE(out.shape() == Shape{2, 3, 4});
  REQUIRE(w.shape() == Shape{2, 2, 3, 3});
  std::vector<double> wv = w.to_vector<double>();
  REQUIRE(wv[0] == Approx(1.0));  // row 0 sees only key 0
  REQUIRE(wv[1] == 0.0);
  std::vector<Tensor> inputs{x};
  for (Tensor& p : m.parameters()) inputs.push_back(p);
  tgt::check_grad(
      [&](const std::vector<Tensor>& in) { return m.forward(in[0], in[0], in[0], causal).first; },
      inputs, "seed mha");
}

// num_kv_heads: the module equals the same projections through SDPA with k and v repeated
// (PyTorch's enable_gqa order), for self-attention (kv-packed), key = value, separate key and
// value, and the bias_kv / zero_attn options; parameter shapes; float64 gradcheck; errors.
TEST_CASE("MultiheadAttention with num_kv_heads: grouped and multi-query", "[mha][gqa]") {
  manual_seed(130);
  const int64_t E = 8, NH = 4, hs = 2, B = 2, T = 3, S = 5;
  for (int64_t NKV : {2, 1})
    for (int form = 0; form < 5; ++form) {
      nn::MultiheadAttentionOptions o;
      o.num_kv_heads = NKV;
      o.batch_first = true;
      if (form == 3) o.add_bias_kv = true;
      if (form == 4) o.add_zero_attn = true;
      MultiheadAttention mha(E, NH, o);
      mha.to(kFloat64);
      REQUIRE(mha.in_proj_weight.shape() == Shape{E + 2 * NKV * hs, E});
      REQUIRE(mha.in_proj_bias.shape() == Shape{E + 2 * NKV * hs});
      {
        NoGradGuard ng;
        for (auto& [n, p] : mha.named_parameters())  // nonzero biases, so they take part
          if (n.find("bias") != std::string::npos) p.copy_(randn(p.shape(), kFloat64));
      }
      Tensor x = tgt::leaf({B, T, E}), mem = tgt::leaf({B, S, E}), val = tgt::leaf({B, S, E});
      const Tensor& key = form == 0 ? x : mem;
      const Tensor& value = form == 0 ? x : form == 2 ? val : mem;
      Tensor out = mha.forward(x, key, value, Tensor(), false).first;
      // the reference: projections, repeated heads, SDPA, out_proj
      const int64_t KV = NKV * hs;
      const Tensor& W = mha.in_proj_weight;
      const Tensor& bias = mha.in_proj_bias;
      Tensor q = linear(x, narrow(W, 0, 0, E), narrow(bias, 0, 0, E));
      Tensor k = linear(key, narrow(W, 0, E, KV), narrow(bias, 0, E, KV));
      Tensor v = linear(value, narrow(W, 0, E + KV, KV), narrow(bias, 0, E + KV, KV));
      int64_t Sk = key.size(1);
      if (o.add_bias_kv) {
        REQUIRE(mha.bias_k.shape() == Shape{1, 1, KV});
        k = cat({k, expand(mha.bias_k, {B, 1, KV})}, 1);
        v = cat({v, expand(mha.bias_v, {B, 1, KV})}, 1);
        ++Sk;
      }
      if (o.add_zero_attn) {
        k = cat({k, zeros({B, 1, KV}, kFloat64)}, 1);
        v = cat({v, zeros({B, 1, KV}, kFloat64)}, 1);
        ++Sk;
      }
      auto heads = [&](const Tensor& t, int64_t n, int64_t h) {
        return reshape(t, {B, n, h, hs}).transpose(1, 2);
      };
      Tensor r = scaled_dot_product_attention(heads(q, T, NH),
                                              repeat_interleave(heads(k, Sk, NKV), NH / NKV, 1),
                                              repeat_interleave(heads(v, Sk, NKV), NH / NKV, 1))
                     .output;
      Tensor ref = mha.out_proj->forward(reshape(r.transpose(1, 2), {B, T, E}));
      tgt::require_close(out, ref, 1e-12, 0,
                         "num_kv_heads " + std::to_string(NKV) + " form " + std::to_string(form));
      Tensor dO = randn(out.shape(), kFloat64);
      std::vector<Tensor> ga = tg::grad({out}, {x, W}, {dO});
      std::vector<Tensor> gb = tg::grad({ref}, {x, W}, {dO});
      tgt::require_close(ga[0], gb[0], 1e-12, 0, "dx");
      tgt::require_close(ga[1], gb[1], 1e-12, 0, "d in_proj_weight");
    }
  // separate projections (kdim != E), gradcheck of inputs
  nn::MultiheadAttentionOptions o;
  o.num_kv_heads = 2;
  o.kdim = 3;
  o.vdim = 5;
  o.structure = AttentionMask::causal();
  MultiheadAttention mha(E, NH, o);
  mha.to(kFloat64);
  REQUIRE(mha.k_proj_weight.shape() == Shape{4, 3});
  REQUIRE(mha.v_proj_weight.shape() == Shape{4, 5});
  REQUIRE(mha.extra_repr() ==
          "embed_dim=8, num_heads=4, kdim=3, vdim=5, num_kv_heads=2, "
          "structure=causal");
  Tensor q = tgt::leaf({4, 2, E}), k = tgt::leaf({4, 2, 3}), v = tgt::leaf({4, 2, 5});
  tgt::check_grad(
      [&](const std::vector<Tensor>& in) { return mha.forward(in[0], in[1], in[2]).first; },
      {q, k, v}, "mha num_kv_heads 2, kdim 3, vdim 5");
  nn::MultiheadAttentionOptions bad;
  bad.num_kv_heads = 3;
  REQUIRE_ERROR(
      MultiheadAttention(E, NH, bad),
      "MultiheadAttention: num_kv_heads 3 must be -1 (num_heads) or a positive divisor of "
      "num_heads 4");
}

TEST_CASE("MultiheadAttention with a kv_cache: incremental self-attention equals the whole call",
          "[mha][kv_cache]") {
  manual_seed(131);
  for (int64_t NKV : {4, 2}) {
    nn::MultiheadAttentionOptions o;
    o.batch_first = true;
    o.num_kv_heads = NKV;
    o.structure = AttentionMask::causal() & AttentionMask::hf_sliding_window(3);
    MultiheadAttention mha(8, 4, o);
    mha.to(kFloat64);
    mha.eval();
    NoGradGuard ng;
    Tensor x = randn({2, 7, 8}, kFloat64);
    Tensor full = mha.forward(x, x, x, Tensor(), false).first;
    nn::KVCache cache(7);
    nn::MHAForwardOptions f;
    f.need_weights = false;
    f.kv_cache = &cache;
    std::vector<Tensor> steps;
    for (int64_t t0 : {0, 2, 3, 4, 5, 6}) {  // 2 positions, then one at a time
      Tensor xs = narrow(x, 1, t0, t0 == 0 ? 2 : 1).contiguous();
      steps.push_back(mha.forward(xs, xs, xs, f).first);
    }
    tgt::require_close(cat(steps, 1), full, 1e-12, 0, "num_kv_heads " + std::to_string(NKV));
    Tensor other = randn({2, 1, 8}, kFloat64);
    REQUIRE_ERROR(mha.forward(other, x, x, f),
                  "kv_cache needs self-attention (query, key and value one tensor, here not one)");
    // issue 40: another layer's cache, and a rolling cache narrower than the window of 3 keys
    MultiheadAttention mha2(8, 4, o);
    mha2.to(kFloat64);
    Tensor x1 = narrow(x, 1, 0, 1).contiguous();
    REQUIRE_ERROR(mha2.forward(x1, x1, x1, f),
                  "KVCache (capacity 7, position 7): holds 7 positions appended by "
                  "MultiheadAttention(embed_dim=8, num_heads=4");
    REQUIRE_ERROR(mha2.forward(x1, x1, x1, f), "one cache per layer");
    nn::KVCache two(2, true);
    f.kv_cache = &two;
    REQUIRE_ERROR(mha.forward(x1, x1, x1, f),
                  "a rolling cache keeps the last 2 keys, but MultiheadAttention(embed_dim=8");
    REQUIRE_ERROR(mha.forward(x1, x1, x1, f), "lets a query read 3 keys, itself included");
  }
}

TEST_CASE("RelativePositionBias: Hugging Face's layout, its mask's gradient reaches the weight",
          "[mha][bias]") {
  manual_seed(132);
  nn::RelativePositionBias rb(2, 8, 16, false);
  rb.to(kFloat64);
  REQUIRE(rb.weight.shape() == Shape{8, 2});
  REQUIRE(rb.named_parameters()[0].first == "weight");
  REQUIRE(rb.extra_repr() == "num_heads=2, num_buckets=8, max_distance=16, bidirectional=False");
  Tensor q = randn({1, 2, 6, 4}, kFloat64), k = randn({1, 2, 6, 4}, kFloat64),
         v = randn({1, 2, 6, 4}, kFloat64);
  Tensor out = scaled_dot_product_attention(q, k, v, AttentionMask::causal() & rb.mask()).output;
  out.sum().backward();
  // the same table given directly
  Tensor table = rb.weight.detach().transpose(0, 1).contiguous().requires_grad_();
  Tensor ref =
      scaled_dot_product_attention(
          q, k, v, AttentionMask::causal() & AttentionMask::relative_bias(table, false, 16))
          .output;
  ref.sum().backward();
  tgt::require_close(out, ref, 0, 0, "output");
  tgt::require_close(rb.weight.grad(), table.grad().transpose(0, 1), 1e-15, 0, "d weight");
  REQUIRE(rb.weight.grad().abs().sum().item<double>() > 0);
  REQUIRE_ERROR(nn::RelativePositionBias(0), "RelativePositionBias: num_heads 0 must be >= 1");
}
