// tests/nn/test_llama.cpp — the KV cache and the Llama-style decoder: KVCache's appends (views
// of the cached positions, capacity, the rolling window), LlamaDecoderLayer against PyTorch
// (tests/fixtures/llama, tools/make_fixtures.py: RMSNorm, rotary q and k, grouped-query causal
// attention with and without a sliding window, SwiGLU; output and every gradient), a float64
// gradcheck, and incremental decoding: the cached forward equals the uncached one over the
// whole sequence, grouped and multi-query, with a rolling cache past its capacity.
#include "fixtures.hpp"
#include "helpers.hpp"

#include "nn/attention.hpp"
#include "nn/kv_cache.hpp"
#include "nn/llama.hpp"
#include "nn/transformer.hpp"

#include <fmt/format.h>

using namespace tg;

namespace {
// Positions 0..T-1 of (B, T, H, D): x[b, t, h, d] = 1000 b + t + 0.01 h + 0.001 d (recognisable).
Tensor positions(int64_t B, int64_t t0, int64_t T, int64_t H, int64_t D) {
  std::vector<double> v;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = t0; t < t0 + T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) v.push_back(1000.0 * b + t + 0.01 * h + 0.001 * d);
  return tensor(v, {B, T, H, D});
}
}  // namespace

TEST_CASE("KVCache: appends return every cached position, capacity, rolling window", "[kv_cache]") {
  nn::KVCache c(6);
  auto [k1, v1] = c.append(positions(2, 0, 4, 2, 3), positions(2, 0, 4, 2, 5));
  REQUIRE(k1.shape() == Shape{2, 4, 2, 3});
  REQUIRE(v1.shape() == Shape{2, 4, 2, 5});
  auto [k2, v2] = c.append(positions(2, 4, 1, 2, 3), positions(2, 4, 1, 2, 5));
  tgt::require_close(k2, positions(2, 0, 5, 2, 3), 0, 0, "k after two appends");
  tgt::require_close(v2, positions(2, 0, 5, 2, 5), 0, 0, "v after two appends");
  REQUIRE(c.size() == 5);
  REQUIRE(c.position() == 5);
  REQUIRE_ERROR(c.append(positions(2, 5, 2, 2, 3), positions(2, 5, 2, 2, 5)),
                "KVCache: 5 cached positions + 2 new exceed the capacity 6");
  REQUIRE_ERROR(c.append(positions(1, 5, 1, 2, 3), positions(1, 5, 1, 2, 5)),
                "do not continue the cached (B, ·, NKV, hs) = (2, ·, 2, 3)");
  REQUIRE_ERROR(c.append(positions(2, 5, 1, 2, 3), positions(2, 5, 2, 2, 5)),
                "KVCache: k (2,1,2,3) and v (2,2,2,5) must be (B, T, NKV, hs)");
  c.reset();
  REQUIRE(c.empty());
  auto [k3, v3] = c.append(positions(1, 0, 2, 1, 3), positions(1, 0, 2, 1, 3));
  tgt::require_close(k3, positions(1, 0, 2, 1, 3), 0, 0, "after reset, another shape");
  (void)v3;

  // Rolling, capacity 4: one at a time past the capacity keeps the last 4, oldest first.
  nn::KVCache r(4, true);
  r.append(positions(1, 0, 3, 2, 2), positions(1, 0, 3, 2, 2));
  for (int64_t t = 3; t < 11; ++t) {
    auto [k, v] = r.append(positions(1, t, 1, 2, 2), positions(1, t, 1, 2, 2));
    const int64_t n = std::min<int64_t>(t + 1, 4);
    tgt::require_close(k, positions(1, t + 1 - n, n, 2, 2), 0, 0,
                       "rolling k at position " + std::to_string(t));
    REQUIRE(r.size() == n);
  }
  // T > 1 that drops keys: the new queries still get the old window and all T new keys.
  auto [k4, v4] = r.append(positions(1, 11, 3, 2, 2), positions(1, 11, 3, 2, 2));
  tgt::require_close(k4, positions(1, 8, 6, 2, 2), 0, 0, "rolling T = 3: 3 old + 3 new");
  auto [k5, v5] = r.append(positions(1, 14, 1, 2, 2), positions(1, 14, 1, 2, 2));
  tgt::require_close(k5, positions(1, 11, 4, 2, 2), 0, 0, "then the last 4 again");
  (void)v4, (void)v5;
  REQUIRE_ERROR(nn::KVCache(0), "KVCache: capacity must be >= 1, got 0");
  Tensor g = randn({1, 1, 2, 2}, kFloat64).requires_grad_();
  REQUIRE_ERROR(nn::KVCache(3).append(g, g), "requires grad; the cache is for inference");
}

namespace {
// A LlamaDecoderLayer (E 8, 4 query / 2 key-value heads, SwiGLU 12) with the fixture's weights.
std::shared_ptr<nn::LlamaDecoderLayer> fixture_layer(const tgt::Fixture& f, int64_t window) {
  nn::LlamaDecoderLayerOptions o;
  o.intermediate_size = 12;
  o.attention.num_kv_heads = 2;
  if (window > 0)
    o.attention.structure = AttentionMask::causal() & AttentionMask::hf_sliding_window(window);
  auto l = std::make_shared<nn::LlamaDecoderLayer>(8, 4, o);
  l->to(kFloat64);
  NoGradGuard ng;
  l->self_attn->q_proj->weight.copy_(f.tensor("wq"));
  l->self_attn->k_proj->weight.copy_(f.tensor("wk"));
  l->self_attn->v_proj->weight.copy_(f.tensor("wv"));
  l->self_attn->o_proj->weight.copy_(f.tensor("wo"));
  l->mlp->gate_proj->weight.copy_(f.tensor("wg"));
  l->mlp->up_proj->weight.copy_(f.tensor("wu"));
  l->mlp->down_proj->weight.copy_(f.tensor("wd"));
  l->input_layernorm->weight.copy_(f.tensor("n1"));
  l->post_attention_layernorm->weight.copy_(f.tensor("n2"));
  return l;
}
}  // namespace

TEST_CASE("LlamaDecoderLayer matches PyTorch: output and every gradient", "[llama][parity]") {
  for (auto [name, window] : {std::pair<std::string, int64_t>{"decoder_layer_gqa", 0},
                              {"decoder_layer_gqa_window3", 3}}) {
    tgt::Fixture f("llama/" + name);
    auto l = fixture_layer(f, window);
    Tensor x = f.tensor("x").requires_grad_();
    Tensor out = l->forward(x);
    tgt::require_close(out, f.tensor("out"), 1e-12, 1e-12, name + ": out");
    const std::vector<std::pair<std::string, Tensor>> params{
        {"wq", l->self_attn->q_proj->weight},       {"wk", l->self_attn->k_proj->weight},
        {"wv", l->self_attn->v_proj->weight},       {"wo", l->self_attn->o_proj->weight},
        {"wg", l->mlp->gate_proj->weight},          {"wu", l->mlp->up_proj->weight},
        {"wd", l->mlp->down_proj->weight},          {"n1", l->input_layernorm->weight},
        {"n2", l->post_attention_layernorm->weight}};
    std::vector<Tensor> wrt{x};
    for (const auto& p : params) wrt.push_back(p.second);
    std::vector<Tensor> g = tg::grad({out}, wrt, {f.tensor("dout")});
    tgt::require_close(g[0], f.tensor("dx"), 1e-12, 1e-12, name + ": dx");
    for (size_t i = 0; i < params.size(); ++i)
      tgt::require_close(g[i + 1], f.tensor("d" + params[i].first), 1e-12, 1e-12,
                         name + ": d" + params[i].first);
  }
}

TEST_CASE("LlamaDecoderLayer: float64 gradcheck of the input and parameters", "[llama]") {
  manual_seed(140);
  nn::LlamaDecoderLayerOptions o;
  o.intermediate_size = 6;
  o.attention.num_kv_heads = 1;
  nn::LlamaDecoderLayer l(4, 2, o);
  l.to(kFloat64);
  Tensor x = tgt::leaf({2, 3, 4});
  tgt::check_grad(
      [&](const std::vector<Tensor>& in) { return l.forward(in[0]); },
      {x, l.self_attn->k_proj->weight, l.mlp->gate_proj->weight, l.input_layernorm->weight},
      "llama decoder layer, multi-query");
  REQUIRE_ERROR(nn::LlamaAttention(8, 4, {.num_kv_heads = 3}),
                "LlamaAttention: num_kv_heads 3 must be -1 (num_heads) or a positive divisor of "
                "num_heads 4: one of -1 (num_heads), 1, 2, 4");
}

TEST_CASE("incremental decoding with a KV cache equals the uncached forward", "[llama][kv_cache]") {
  manual_seed(141);
  struct Config {
    std::string name;
    int64_t num_kv_heads, window, capacity;
    bool rolling;
  };
  for (const Config& c : {Config{"grouped, full causal", 2, 0, 16, false},
                          Config{"multi-query, full causal", 1, 0, 16, false},
                          Config{"grouped, window 4, rolling cache of 4", 2, 4, 4, true}}) {
    nn::LlamaDecoderLayerOptions o;
    o.attention.num_kv_heads = c.num_kv_heads;
    if (c.window > 0)
      o.attention.structure = AttentionMask::causal() & AttentionMask::hf_sliding_window(c.window);
    std::vector<std::shared_ptr<nn::LlamaDecoderLayer>> layers;
    for (int i = 0; i < 2; ++i) {
      layers.push_back(std::make_shared<nn::LlamaDecoderLayer>(8, 4, o));
      layers.back()->to(kFloat64);
    }
    const int64_t B = 2, T = 11;
    Tensor x = randn({B, T, 8}, kFloat64);
    NoGradGuard ng;
    Tensor full = x;
    for (auto& l : layers) full = l->forward(full);
    // prefill 3 positions, then one at a time
    std::vector<nn::KVCache> caches(layers.size(), nn::KVCache(c.capacity, c.rolling));
    std::vector<Tensor> steps;
    for (int64_t t0 = 0; t0 < T;) {
      const int64_t n = t0 == 0 ? 3 : 1;
      Tensor h = narrow(x, 1, t0, n);
      for (size_t i = 0; i < layers.size(); ++i) h = layers[i]->forward(h, &caches[i]);
      steps.push_back(h);
      t0 += n;
    }
    tgt::require_close(cat(steps, 1), full, 1e-12, 1e-12, c.name);
    REQUIRE(caches[0].position() == T);
  }
}

// ---- issue 40: bad caches and options refused ----

namespace {
// LlamaAttention (E 8, 4 query / 2 key-value heads) in float64, with an optional sliding window.
std::shared_ptr<nn::LlamaAttention> attention(int64_t window) {
  nn::LlamaAttentionOptions o;
  o.num_kv_heads = 2;
  if (window > 0) o.structure = AttentionMask::causal() & AttentionMask::hf_sliding_window(window);
  auto a = std::make_shared<nn::LlamaAttention>(8, 4, o);
  a->to(kFloat64);
  return a;
}
// x (B, T, 8) fed one position at a time through the cache: the outputs side by side.
Tensor token_by_token(nn::LlamaAttention& a, const Tensor& x, nn::KVCache& cache) {
  std::vector<Tensor> steps;
  for (int64_t t = 0; t < x.size(1); ++t) steps.push_back(a.forward(narrow(x, 1, t, 1), &cache));
  return cat(steps, 1);
}
}  // namespace

TEST_CASE(
    "KVCache: a rolling cache smaller than the layer's window is refused, one covering it "
    "matches the uncached forward",
    "[kv_cache][llama]") {
  manual_seed(142);
  NoGradGuard ng;
  Tensor x = randn({2, 13, 8}, kFloat64);
  // Full causal attention reads every earlier key: no rolling cache is exact.
  auto causal = attention(0);
  nn::KVCache four(4, true);
  REQUIRE_ERROR(causal->forward(narrow(x, 1, 0, 1), &four),
                "KVCache (capacity 4, rolling, position 0): a rolling cache keeps the last 4 keys, "
                "but LlamaAttention(hidden_size=8, num_heads=4, num_kv_heads=2, head_dim=2, "
                "structure=causal) at ");
  REQUIRE_ERROR(causal->forward(narrow(x, 1, 0, 1), &four),
                "with structure 'causal' lets a query read every earlier key (no sliding window)");
  REQUIRE(four.empty());  // refused before anything was appended
  // A window of 8 keys through a rolling cache of 4: refused (it would differ by about 0.4).
  auto window8 = attention(8);
  REQUIRE_ERROR(window8->forward(narrow(x, 1, 0, 1), &four),
                "with structure 'causal & local(7,0)' lets a query read 8 keys, itself included");
  // A rolling cache of exactly the window (and a wider one): the uncached forward's numbers, to
  // rounding (one row's projections and 13 rows' sum in different orders: 1 ulp apart).
  const Tensor full = window8->forward(x);
  for (int64_t cap : {8, 9}) {
    nn::KVCache rolling(cap, true);
    tgt::require_close(token_by_token(*window8, x, rolling), full, 1e-12, 1e-12,
                       "window 8, rolling cache of " + std::to_string(cap));
    REQUIRE(rolling.position() == 13);
  }
  // Blocked windows count positions from 0, which a rolling cache moves.
  nn::LlamaAttentionOptions bo;
  bo.structure = AttentionMask::causal() & AttentionMask::blocked(4);
  nn::LlamaAttention blocked(8, 4, bo);
  nn::KVCache r8(8, true);
  REQUIRE_ERROR(blocked.forward(randn({1, 1, 8}), &r8), "has blocked windows");
}

TEST_CASE("KVCache: one cache for two layers is refused naming both, and a cache per layer is fine",
          "[kv_cache][llama]") {
  manual_seed(143);
  NoGradGuard ng;
  auto a = attention(0), b = attention(0);
  Tensor x = randn({1, 3, 8}, kFloat64);
  nn::KVCache shared(8);
  a->forward(x, &shared);
  const std::string name_a = fmt::format("at {}", fmt::ptr(static_cast<const void*>(a.get())));
  const std::string name_b = fmt::format("at {}", fmt::ptr(static_cast<const void*>(b.get())));
  REQUIRE_ERROR(b->forward(x, &shared),
                "KVCache (capacity 8, position 3): holds 3 positions appended by "
                "LlamaAttention(hidden_size=8, num_heads=4, num_kv_heads=2, head_dim=2, "
                "structure=causal) " +
                    name_a + ", and LlamaAttention(");
  REQUIRE_ERROR(b->forward(x, &shared), name_b + " appends to it: one cache per layer");
  REQUIRE(shared.position() == 3);  // the refused append changed nothing
  REQUIRE_ERROR(shared.append(zeros({1, 1, 2, 2}, kFloat64), zeros({1, 1, 2, 2}, kFloat64)),
                "and a direct KVCache::append appends to it");
  // One cache per layer: two layers in a stack, token by token, equal the uncached stack.
  nn::KVCache ca(8), cb(8);
  std::vector<Tensor> steps;
  for (int64_t t = 0; t < 3; ++t)
    steps.push_back(b->forward(a->forward(narrow(x, 1, t, 1), &ca), &cb));
  tgt::require_close(cat(steps, 1), b->forward(a->forward(x)), 1e-12, 1e-12, "two caches");
  // After reset() the cache belongs to whichever layer appends next.
  shared.reset();
  tgt::require_close(b->forward(x, &shared), b->forward(x), 1e-12, 1e-12, "reset, then b");
}

TEST_CASE("KVCache: a structure that reads later keys is refused, in both attention modules",
          "[kv_cache][llama][mha]") {
  manual_seed(144);
  NoGradGuard ng;
  Tensor x = randn({1, 3, 8}, kFloat64);
  const std::string why =
      "lets a query read keys after its own position, which a cache holds "
      "only once they are appended";
  for (const AttentionMask& s :
       {AttentionMask(), AttentionMask::local(2, 1), AttentionMask::blocked(2)}) {
    INFO((s.is_none() ? std::string("none") : s.name()));
    nn::LlamaAttentionOptions o;
    o.structure = s;
    nn::LlamaAttention a(8, 4, o);
    a.to(kFloat64);
    nn::KVCache cache(8);
    REQUIRE_ERROR(a.forward(x, &cache), why);
    REQUIRE(cache.empty());  // refused before anything was appended
    nn::MultiheadAttentionOptions mo;
    mo.batch_first = true;
    mo.structure = s;
    nn::MultiheadAttention mha(8, 4, mo);
    mha.to(kFloat64);
    nn::MHAForwardOptions f;
    f.need_weights = false;
    f.kv_cache = &cache;
    REQUIRE_ERROR(mha.forward(x, x, x, f), why);
    f.is_causal = true;  // is_causal makes any of them causal: the cache is exact again
    Tensor whole = mha.forward(x, x, x, Tensor(), false, Tensor(), true, true).first;
    std::vector<Tensor> steps;
    for (int64_t t = 0; t < 3; ++t) {
      Tensor xt = narrow(x, 1, t, 1).contiguous();
      steps.push_back(mha.forward(xt, xt, xt, f).first);
    }
    tgt::require_close(cat(steps, 1), whole, 1e-12, 1e-12, "is_causal with a cache");
  }
}

TEST_CASE("KVCache: capacities whose buffer would overflow are refused naming the cache",
          "[kv_cache]") {
  const int64_t big = (int64_t{1} << 62) + 1;
  REQUIRE_ERROR(nn::KVCache(big, true),
                "KVCache: a rolling cache's capacity must be <= 2^62 = 4611686018427387903 (its "
                "buffer has 2·capacity rows), got 4611686018427387905");
  // 2^62 rows fit int64, but not times B·NKV·hs: refused before any allocation.
  nn::KVCache huge(int64_t{1} << 61, true);
  REQUIRE_ERROR(huge.append(zeros({1, 1, 2, 2}), zeros({1, 1, 2, 2})),
                "KVCache (capacity 2305843009213693952, rolling, position 0): its buffers k "
                "(1,4611686018427387904,2,2) and v (1,4611686018427387904,2,2) ((B, 2·capacity, "
                "NKV, hs) for k (1,1,2,2), v (1,1,2,2)) have more elements than int64 holds");
  REQUIRE(huge.empty());
}

TEST_CASE("num_kv_heads: only -1 or a positive divisor of num_heads, in every module",
          "[llama][mha]") {
  for (int64_t bad : {-2, 0, 3, 5}) {
    INFO(bad);
    const std::string why = fmt::format(
        "num_kv_heads {} must be -1 (num_heads) or a positive divisor of num_heads 4: one of -1 "
        "(num_heads), 1, 2, 4",
        bad);
    nn::LlamaAttentionOptions lo;
    lo.num_kv_heads = bad;
    REQUIRE_ERROR(nn::LlamaAttention(8, 4, lo), "LlamaAttention: " + why);
    nn::LlamaDecoderLayerOptions dl;
    dl.attention.num_kv_heads = bad;
    REQUIRE_ERROR(nn::LlamaDecoderLayer(8, 4, dl), "LlamaAttention: " + why);
    nn::MultiheadAttentionOptions mo;
    mo.num_kv_heads = bad;
    REQUIRE_ERROR(nn::MultiheadAttention(8, 4, mo), "MultiheadAttention: " + why);
    nn::TransformerLayerOptions to;
    to.num_kv_heads = bad;
    REQUIRE_ERROR(nn::TransformerEncoderLayer(8, 4, to), "MultiheadAttention: " + why);
    REQUIRE_ERROR(nn::TransformerDecoderLayer(8, 4, to), "MultiheadAttention: " + why);
  }
  nn::LlamaAttentionOptions one;
  one.num_kv_heads = 1;
  REQUIRE(nn::LlamaAttention(8, 4, one).num_kv_heads == 1);
  REQUIRE(nn::LlamaAttention(8, 4).num_kv_heads == 4);  // -1, the default
}
