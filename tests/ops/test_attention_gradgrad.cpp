// tests/ops/test_attention_gradgrad.cpp — second derivatives through scaled_dot_product_attention:
// for every mask kind (causal top-left and bottom-right, local, blocked, key padding and lengths,
// fully masked rows, a differentiable additive mask, T5 and ALiBi biases), every layout (heads
// first and last, packed qkv, packed kv, one tensor as q, k and v) and grouped-query heads, the
// create_graph gradients equal the first-order ones and gradgradcheck passes, dropout included
// (the forward's masks again); a MultiheadAttention layer passes gradgradcheck; local attention's
// second order stays O(T·W) in memory.
#include "helpers.hpp"

#include "nn/attention.hpp"
#include "ops/attention/attention.hpp"
#include "ops/functional/functional.hpp"

using namespace tg;

namespace {
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

Tensor sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMask& m,
            SDPAOptions o = {}) {
  return scaled_dot_product_attention(q, k, v, m, o).output;
}
}  // namespace

TEST_CASE("gradgradcheck: fused attention with every mask kind") {
  manual_seed(21);
  const Shape s{2, 2, 5, 3};
  const Tensor lengths = tensor(std::vector<int64_t>{3, 5});
  const Tensor empty_row = tensor(std::vector<int64_t>{0, 4});  // batch 0: every row masked
  const Tensor pad = tensor(std::vector<double>{0, 0, 1, 0, 1, 0, 0, 0, 0, 1}, {2, 5}) > 0.5;
  const std::vector<std::pair<const char*, AttentionMask>> masks = {
      {"none", AttentionMask()},
      {"causal", AttentionMask::causal()},
      {"local (2, 0)", AttentionMask::local(2, 0)},
      {"local (1, 1)", AttentionMask::local(1, 1)},
      {"blocked 2", AttentionMask::blocked(2)},
      {"causal & lengths", AttentionMask::causal() & AttentionMask::key_lengths(lengths)},
      {"key padding", AttentionMask::key_padding(pad, MaskPolarity::TrueBlocked)},
      {"fully masked rows", AttentionMask::key_lengths(empty_row)},
  };
  for (const auto& [name, m] : masks) {
    const AttentionMask mask = m;
    tgt::check_second_order(name, [=](auto& in) { return sdpa(in[0], in[1], in[2], mask); },
                            {tgt::leaf(s), tgt::leaf(s), tgt::leaf(s)});
  }
  // bottom-right causal with fewer queries than keys
  tgt::check_second_order(
      "causal bottom-right",
      [](auto& in) {
        return sdpa(in[0], in[1], in[2], AttentionMask::causal(CausalAlign::BottomRight));
      },
      {tgt::leaf({1, 2, 3, 3}), tgt::leaf({1, 2, 5, 3}), tgt::leaf({1, 2, 5, 3})});
}

TEST_CASE("gradgradcheck: fused attention with differentiable masks and position biases") {
  manual_seed(22);
  const Shape s{1, 2, 4, 3};
  tgt::check_second_order(
      "additive mask",
      [](auto& in) { return sdpa(in[0], in[1], in[2], AttentionMask::additive(in[3])); },
      {tgt::leaf(s), tgt::leaf(s), tgt::leaf(s), tgt::leaf({4, 4})});
  tgt::check_second_order(
      "relative bias & causal",
      [](auto& in) {
        return sdpa(in[0], in[1], in[2],
                    AttentionMask::causal() & AttentionMask::relative_bias(in[3], false, 8));
      },
      {tgt::leaf(s), tgt::leaf(s), tgt::leaf(s), tgt::leaf({2, 4})});
  tgt::check_second_order("alibi & local",
                          [](auto& in) {
                            return sdpa(in[0], in[1], in[2],
                                        AttentionMask::local(2, 0) & AttentionMask::alibi(in[3]));
                          },
                          {tgt::leaf(s), tgt::leaf(s), tgt::leaf(s), tgt::leaf({2})});
}

TEST_CASE("gradgradcheck: fused attention in every layout, grouped-query heads") {
  manual_seed(23);
  SDPAOptions last;
  last.heads_last = true;
  tgt::check_second_order(
      "heads last, causal",
      [=](auto& in) { return sdpa(in[0], in[1], in[2], AttentionMask::causal(), last); },
      {tgt::leaf({2, 4, 2, 3}), tgt::leaf({2, 4, 2, 3}), tgt::leaf({2, 4, 2, 3})});
  tgt::check_second_order(
      "packed qkv, local",
      [](auto& in) {
        return scaled_dot_product_attention_packed(in[0], AttentionMask::local(1, 0)).output;
      },
      {tgt::leaf({2, 4, 3, 2, 3})});
  tgt::check_second_order("packed kv, grouped",
                          [](auto& in) {
                            SDPAOptions o;
                            o.enable_gqa = true;
                            return scaled_dot_product_attention_kv_packed(
                                       in[0], in[1], AttentionMask::causal(), o)
                                .output;
                          },
                          {tgt::leaf({1, 4, 4, 3}), tgt::leaf({1, 4, 2, 2, 3})});
  tgt::check_second_order(
      "grouped-query heads (4 query, 2 key/value)",
      [](auto& in) {
        SDPAOptions o;
        o.enable_gqa = true;
        return sdpa(in[0], in[1], in[2], AttentionMask::blocked(2), o);
      },
      {tgt::leaf({1, 4, 4, 3}), tgt::leaf({1, 2, 4, 3}), tgt::leaf({1, 2, 4, 3})});
  tgt::check_second_order("one tensor as q, k and v",
                          [](auto& in) {
                            const Tensor x = tanh(in[0]);
                            return sdpa(x, x, x, AttentionMask::causal());
                          },
                          {tgt::leaf({1, 2, 4, 3})});
}

TEST_CASE("gradgradcheck: fused attention with dropout (the forward's masks again)") {
  manual_seed(24);
  SDPAOptions o;
  o.dropout_p = 0.3;
  tgt::check_second_order(
      "dropout, causal",
      [=](auto& in) {
        manual_seed(77);  // every call draws the same masks
        return sdpa(in[0], in[1], in[2], AttentionMask::causal(), o);
      },
      {tgt::leaf({1, 2, 5, 3}), tgt::leaf({1, 2, 5, 3}), tgt::leaf({1, 2, 5, 3})});
  // with a differentiable mask too, create_graph is refused, naming the op
  Tensor q = tgt::leaf({1, 2, 4, 3}), m = tgt::leaf({4, 4});
  Tensor out = sdpa(q, q, q, AttentionMask::additive(m), o);
  GradOptions cg;
  cg.create_graph = true;
  REQUIRE_ERROR(grad({out.sum()}, {q}, {}, cg),
                "backward of scaled_dot_product_attention: create_graph with dropout and a "
                "differentiable mask");
}

TEST_CASE("gradgradcheck: a MultiheadAttention layer with padding and a causal mask") {
  manual_seed(25);
  nn::MultiheadAttentionOptions mo;
  mo.batch_first = true;
  auto mha = std::make_shared<nn::MultiheadAttention>(6, 2, mo);
  mha->to(kFloat64);
  const Tensor pad = tensor(std::vector<double>{0, 0, 0, 1, 0, 0, 0, 0}, {2, 4}) > 0.5;
  auto fn = [=](const std::vector<Tensor>& in) {
    nn::MHAForwardOptions f;
    f.key_padding_mask = pad;
    f.need_weights = false;
    f.is_causal = true;
    return mha->forward(in[0], in[0], in[0], f).first;
  };
  tgt::check_second_order("mha", fn, {tgt::leaf({2, 4, 6})});
  // with respect to the projection weights too (gradient penalty style), fast mode
  auto fw = [=](const std::vector<Tensor>& in) {
    nn::MHAForwardOptions f;
    f.need_weights = false;
    Tensor saved = mha->in_proj_weight;
    mha->in_proj_weight = in[1];
    Tensor out = mha->forward(in[0], in[0], in[0], f).first;
    mha->in_proj_weight = saved;
    return out;
  };
  Tensor w = mha->in_proj_weight.detach().clone().requires_grad_();
  GradcheckOptions fast;
  fast.mode = GradcheckMode::Fast;
  GradcheckReport r = gradgradcheck(fw, {tgt::leaf({2, 4, 6}), w}, Tensor(), fast);
  INFO(r.str());
  REQUIRE(r.passed);
}

TEST_CASE("second order through local attention allocates no T×S matrix (O(T·W))") {
  // T = S = 2048 keys with a 16-key causal window: a dense float32 T×S matrix is 16 MiB; the
  // operands and every gradient of the HVP together stay under 2 MiB.
  manual_seed(26);
  const int64_t T = 2048;
  Tensor q = randn({1, 1, T, 4}).requires_grad_(), k = randn({1, 1, T, 4}).requires_grad_();
  Tensor v = randn({1, 1, T, 4}).requires_grad_();
  cpu_reset_peak_memory();
  const size_t base = cpu_memory().allocated;
  Tensor out = sdpa(q, k, v, AttentionMask::local(15, 0));
  GradOptions cg;
  cg.create_graph = true;
  std::vector<Tensor> g = grad({(out * out).sum()}, {q, k, v}, {}, cg);
  Tensor hv = grad({(g[0] * g[1]).sum() + g[2].sum()}, {q, k, v})[0];
  const size_t peak = cpu_memory().peak_allocated - base;
  INFO("peak " << peak << " bytes above the start");
  REQUIRE(hv.shape() == Shape{1, 1, T, 4});
  REQUIRE(peak < 2u * 1024 * 1024);
  REQUIRE(peak < static_cast<size_t>(T * T * 4) / 8);
}

TEST_CASE("second order: the fused attention's H·v equals the composed attention's") {
  // composed: softmax(scale·QKᵀ masked) V with matmul, masked_fill and softmax (their own
  // recorded backward), fully masked rows set to 0 as the fused kernel gives them
  manual_seed(27);
  // hs 37: the kernel's head-size loops run their SIMD body and a tail
  const int64_t B = 2, NH = 2, T = 6, S = 6, hs = 37;
  const Tensor lengths = tensor(std::vector<int64_t>{0, 4});  // batch 0: every row fully masked
  const std::vector<std::pair<const char*, AttentionMask>> masks = {
      {"causal", AttentionMask::causal()},
      {"local (2, 1)", AttentionMask::local(2, 1)},
      {"blocked 3, look-back", AttentionMask::blocked(3, BlockedOptions{1, 0, true})},
      {"causal & lengths, fully masked rows",
       AttentionMask::causal() & AttentionMask::key_lengths(lengths)},
  };
  for (const auto& [name, m] : masks) {
    INFO(name);
    const Tensor allowed = m.dense_allowed(B, NH, T, S);
    auto composed = [&](const Tensor& q, const Tensor& k, const Tensor& v) {
      const Tensor s = mul(matmul(q, transpose(k, -2, -1)), 1 / std::sqrt(double(hs)));
      const Tensor p = softmax(masked_fill(s, logical_not(allowed), -INFINITY), -1);
      const Tensor any = gt(sum(allowed.to(kFloat64), {-1}, true), 0.0);
      return matmul(where(any, p, zeros({}, kFloat64)), v);
    };
    auto loss = [&](bool fused) {
      return [&, fused](const std::vector<Tensor>& in) {
        const Tensor o = fused ? sdpa(in[0], in[1], in[2], m) : composed(in[0], in[1], in[2]);
        return sum(mul(o, o));
      };
    };
    std::vector<Tensor> xs{randn({B, NH, T, hs}, kFloat64), randn({B, NH, S, hs}, kFloat64),
                           randn({B, NH, S, hs}, kFloat64)};
    for (Tensor& x : xs) {  // zeros, negative zeros and subnormals among the values
      double* p = x.data<double>();
      for (int64_t i = 0; i < x.numel(); i += 5)
        p[i] = (i / 5) % 3 == 0 ? 0.0 : (i / 5) % 3 == 1 ? -0.0 : 1e-310;
    }
    const std::vector<Tensor> v{randn({B, NH, T, hs}, kFloat64), randn({B, NH, S, hs}, kFloat64),
                                randn({B, NH, S, hs}, kFloat64)};
    auto [l1, h1] = func::hvp(loss(true), xs, v);
    auto [l2, h2] = func::hvp(loss(false), xs, v);
    tgt::require_close(l1, l2, 1e-12, 1e-10, "loss");
    for (size_t i = 0; i < 3; ++i) tgt::require_close(h1[i], h2[i], 1e-12, 1e-9, name);
  }
}
