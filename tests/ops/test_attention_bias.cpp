// tests/ops/test_attention_bias.cpp — position biases in the fused attention
// (AttentionMask::relative_bias, alibi): T5's buckets and ALiBi's slopes against Hugging Face's
// and the paper's values; the fused kernel against the same bias made dense
// (AttentionMask::dense_bias, an additive mask of recorded ops) for every structural mask,
// padding, bottom-right alignment, grouped-query heads, a shared table and float32, values and
// the gradients of q, k, v, the table and the slopes; PyTorch fixtures (tests/fixtures/
// attention_bias); float64 gradcheck; a long window in O(T·W); errors.
#include "fixtures.hpp"
#include "helpers.hpp"

#include "ops/attention/attention.hpp"

using namespace tg;
using A = AttentionMask;

TEST_CASE("T5 buckets and ALiBi slopes match Hugging Face and the paper", "[attention][bias]") {
  const std::vector<int64_t> rel{-300, -128, -100, -64, -33, -16, -9, -8,  -7,  -1, 0,
                                 1,    7,    8,    9,   16,  33,  64, 100, 128, 300};
  // transformers' _relative_position_bucket(rel, bidirectional, num_buckets, max_distance)
  const std::vector<int64_t> bi32{15, 15, 15, 14, 12, 10, 8,  8,  7,  1, 0,
                                  17, 23, 24, 24, 26, 28, 30, 31, 31, 31};
  const std::vector<int64_t> uni32{31, 31, 30, 26, 21, 16, 9, 8, 7, 1, 0,
                                   0,  0,  0,  0,  0,  0,  0, 0, 0, 0};
  const std::vector<int64_t> bi10{4, 4, 4, 4, 4, 4, 3, 3, 3, 1, 0, 6, 8, 8, 8, 9, 9, 9, 9, 9, 9};
  for (size_t k = 0; k < rel.size(); ++k) {
    INFO("relative position " << rel[k]);
    CHECK(A::t5_bucket(rel[k], true, 32, 128) == bi32[k]);
    CHECK(A::t5_bucket(rel[k], false, 32, 128) == uni32[k]);
    CHECK(A::t5_bucket(rel[k], true, 10, 20) == bi10[k]);
  }
  // 2^(-8k/n) for n a power of two; 6 heads: the 4 of n = 4, then every other one of n = 8
  // (the ALiBi repository's get_slopes)
  tgt::require_close(A::alibi_slopes(8, kFloat64),
                     {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625}, 1e-16, 0,
                     "alibi 8");
  tgt::require_close(A::alibi_slopes(6, kFloat64), {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125},
                     1e-15, 0, "alibi 6");
}

namespace {
// out and the gradients of q, k, v, table, slopes: the fused kernel with `m` & the biases, or the
// same biases made dense as an additive mask.
std::vector<Tensor> run_bias(const Tensor& q, const Tensor& k, const Tensor& v, const A& m,
                             const Tensor& table, const Tensor& slopes, bool dense,
                             const Tensor& dO, bool gqa = false) {
  A biased = m & A::relative_bias(table, !m.has_causal(), 12) & A::alibi(slopes);
  const int64_t NH = q.size(1), T = q.size(2), S = k.size(2);
  A use = biased;
  if (dense) {
    use = m & A::additive(biased.dense_bias(NH, T, S).unsqueeze(0));
  }
  SDPAOptions o;
  o.enable_gqa = gqa;
  Tensor out = scaled_dot_product_attention(q, k, v, use, o).output;
  std::vector<Tensor> g = tg::grad({out}, {q, k, v, table, slopes}, {dO});
  g.insert(g.begin(), out);
  return g;
}
}  // namespace

TEST_CASE("position biases in the fused kernel equal the dense additive mask, values and grads",
          "[attention][bias]") {
  manual_seed(210);
  const CausalAlign BR = CausalAlign::BottomRight;
  Tensor pad = tensor(std::vector<bool>{false, false, true,  false, false, false, false, false,
                                        true,  true,  false, false, false, false, true,  false,
                                        false, false, false, false, false, false, false, true},
                      {2, 12});
  struct Case {
    std::string name;
    A mask;
    int64_t T, S;
  };
  for (DType dt : {kFloat64, kFloat32})
    for (const Case& c :
         {Case{"none", A(), 9, 12}, Case{"causal bottom-right", A::causal(BR), 9, 12},
          Case{"local(3,0) bottom-right", A::local(3, 0, BR), 9, 12},
          Case{"blocked(4) causal", A::blocked(4, {1, 0, true}), 12, 12},
          Case{"padding", A::key_padding(pad, MaskPolarity::TrueBlocked), 9, 12},
          Case{"causal, several tiles", A::causal(), 150, 150}})
      for (bool shared : {false, true}) {
        const int64_t NH = 2;
        Tensor q = randn({2, NH, c.T, 4}, dt).requires_grad_(),
               k = randn({2, NH, c.S, 4}, dt).requires_grad_(),
               v = randn({2, NH, c.S, 3}, dt).requires_grad_();
        Tensor table = randn({shared ? 1 : NH, 10}, dt).requires_grad_();
        Tensor slopes = A::alibi_slopes(NH, dt).requires_grad_();
        Tensor dO = randn({2, NH, c.T, 3}, dt);
        const std::string what =
            c.name + (shared ? ", shared table" : "") + (dt == kFloat32 ? " float32" : " float64");
        const std::vector<Tensor> a = run_bias(q, k, v, c.mask, table, slopes, false, dO),
                                  b = run_bias(q, k, v, c.mask, table, slopes, true, dO);
        const double tol = dt == kFloat32 ? 3e-5 : 1e-11;
        const char* names[] = {"out", "dq", "dk", "dv", "dtable", "dslopes"};
        for (int i = 0; i < 6; ++i)
          tgt::require_close(a[i], b[i], tol, tol, what + ": " + names[i]);
      }
  // grouped-query heads read the same biases per query head
  Tensor q = randn({1, 4, 7, 4}, kFloat64).requires_grad_(),
         k = randn({1, 2, 7, 4}, kFloat64).requires_grad_(),
         v = randn({1, 2, 7, 4}, kFloat64).requires_grad_();
  Tensor table = randn({4, 10}, kFloat64).requires_grad_();
  Tensor slopes = A::alibi_slopes(4, kFloat64).requires_grad_();
  Tensor dO = randn({1, 4, 7, 4}, kFloat64);
  const std::vector<Tensor> a = run_bias(q, k, v, A::causal(), table, slopes, false, dO, true),
                            b = run_bias(q, k, v, A::causal(), table, slopes, true, dO, true);
  for (int i = 0; i < 6; ++i)
    tgt::require_close(a[i], b[i], 1e-11, 1e-11, "gqa " + std::to_string(i));
}

TEST_CASE("position biases match PyTorch's attn_mask values and gradients", "[attention][bias]") {
  for (const auto& [name, causal, bidirectional, maxd] :
       {std::tuple<std::string, bool, bool, int64_t>{"t5_causal_alibi", true, false, 16},
        {"t5_bidirectional", false, true, 12}}) {
    tgt::Fixture f("attention_bias/" + name);
    std::vector<Tensor> in;
    for (const char* n : {"q", "k", "v", "table", "slopes"})
      in.push_back(f.tensor(n).requires_grad_());
    A m = A::relative_bias(in[3], bidirectional, maxd) & A::alibi(in[4]);
    if (causal) m = m & A::causal(CausalAlign::BottomRight);
    m = m.aligned(CausalAlign::BottomRight);  // the fixture's positions: i + (S - T)
    Tensor out = scaled_dot_product_attention(in[0], in[1], in[2], m).output;
    tgt::require_close(out, f.tensor("out"), 1e-12, 1e-10, name + ": out");
    std::vector<Tensor> g = tg::grad({out}, in, {f.tensor("dout")});
    const char* dn[] = {"dq", "dk", "dv", "dtable", "dslopes"};
    for (int i = 0; i < 5; ++i)
      tgt::require_close(g[i], f.tensor(dn[i]), 1e-12, 1e-10, name + ": " + dn[i]);
  }
}

TEST_CASE("position biases: gradcheck, a long window in O(T·W), errors", "[attention][bias]") {
  manual_seed(211);
  Tensor q = tgt::leaf({1, 2, 5, 3}), k = tgt::leaf({1, 2, 6, 3}), v = tgt::leaf({1, 2, 6, 2});
  Tensor table = tgt::leaf({2, 6}), slopes = tgt::leaf({2});
  tgt::check_grad(
      [](const std::vector<Tensor>& in) {
        const A m = A::local(2, 1, CausalAlign::BottomRight) & A::relative_bias(in[3], true, 8) &
                    A::alibi(in[4]);
        return scaled_dot_product_attention(in[0], in[1], in[2], m).output;
      },
      {q, k, v, table, slopes}, "sdpa with relative bias and alibi");
  // T = 4096 with a 16-key window: no dense T×S bias (which alone would be 4096² floats per head)
  Tensor ql = randn({1, 2, 4096, 16}).requires_grad_(), kl = randn({1, 2, 4096, 16}),
         vl = randn({1, 2, 4096, 16});
  Tensor tl = randn({2, 32}).requires_grad_();
  Tensor out = scaled_dot_product_attention(
                   ql, kl, vl, A::causal() & A::local(15, 0) & A::relative_bias(tl, false, 64))
                   .output;
  out.sum().backward();
  REQUIRE(tl.grad().shape() == Shape{2, 32});
  REQUIRE(std::isfinite(tl.grad().sum().item<double>()));
  REQUIRE_ERROR(A::relative_bias(zeros({2, 3, 4}, kFloat64)),
                "AttentionMask::relative_bias: table (2,3,4) must be (NH or 1, buckets >= 2)");
  REQUIRE_ERROR(scaled_dot_product_attention(q, k, v, A::relative_bias(zeros({3, 6}, kFloat64))),
                "relative-position table (3,6) must be (NH or 1, buckets) with NH = 2");
  REQUIRE_ERROR(scaled_dot_product_attention(q, k, v, A::alibi(zeros({3}, kFloat64))),
                "ALiBi slopes (3) must be (NH) = (2)");
  REQUIRE_ERROR(A::alibi(zeros({2}, kFloat64)) & A::alibi(zeros({2}, kFloat64)),
                "both hold ALiBi slopes");
}
