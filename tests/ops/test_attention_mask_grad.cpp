// tests/ops/test_attention_mask_grad.cpp — a differentiable additive mask (AttentionMask::additive
// of a tensor that requires grad) gets dScores summed to its broadcast shape, as PyTorch's
// attn_mask: float64 gradchecks for every mask shape, with and without structure, in every layout
// (heads first, heads last, packed qkv, packed kv); the fused path against the composed
// softmax(scale·QKᵀ + m)·V in float32 over several row tiles; a constant mask stays constant.
#include "helpers.hpp"

#include "ops/attention/attention.hpp"

#include <cmath>
#include <limits>

using namespace tg;

namespace {
constexpr int64_t B = 2, NH = 2, T = 4, S = 5, hs = 3;

// The mask shapes PyTorch's attn_mask broadcasts from, for (B, NH, T, S).
std::vector<Shape> mask_shapes(int64_t t, int64_t s) {
  return {{t, s}, {1, 1, t, s}, {B, 1, t, s}, {1, NH, t, s}, {B, NH, t, s}};
}

GradcheckFn sdpa_fn(const AttentionMask& structure) {
  return [structure](const std::vector<Tensor>& in) {
    return scaled_dot_product_attention(in[0], in[1], in[2],
                                        AttentionMask::additive(in[3]) & structure)
        .output;
  };
}
}  // namespace

TEST_CASE("a differentiable additive mask: float64 gradcheck for every mask shape",
          "[attention][mask_grad]") {
  manual_seed(11);
  for (const AttentionMask& st :
       {AttentionMask(), AttentionMask::causal(), AttentionMask::local(1, 1)}) {
    for (const Shape& ms : mask_shapes(T, S)) {
      Tensor q = tgt::leaf({B, NH, T, hs}), k = tgt::leaf({B, NH, S, hs}),
             v = tgt::leaf({B, NH, S, hs}), m = tgt::leaf(ms);
      tgt::check_grad(sdpa_fn(st), {q, k, v, m},
                      fmt::format("sdpa additive {} & {}", shape_str(ms), st.name()));
      // Only the mask requires grad: the node is still recorded and dMask flows.
      Tensor qc = q.detach(), kc = k.detach(), vc = v.detach();
      tgt::check_grad(sdpa_fn(st), {qc, kc, vc, m},
                      fmt::format("sdpa additive {} & {}, mask only", shape_str(ms), st.name()));
    }
  }
}

TEST_CASE("a differentiable additive mask in every layout: heads last, packed qkv, packed kv",
          "[attention][mask_grad]") {
  manual_seed(12);
  SDPAOptions hl;
  hl.heads_last = true;
  for (const Shape& ms : mask_shapes(T, S)) {
    Tensor q = tgt::leaf({B, T, NH, hs}), k = tgt::leaf({B, S, NH, hs}),
           v = tgt::leaf({B, S, NH, hs}), m = tgt::leaf(ms);
    tgt::check_grad(
        [hl](const std::vector<Tensor>& in) {
          return scaled_dot_product_attention(in[0], in[1], in[2], AttentionMask::additive(in[3]),
                                              hl)
              .output;
        },
        {q, k, v, m}, "heads last, mask " + shape_str(ms));
    Tensor kv = tgt::leaf({B, S, 2, NH, hs});
    tgt::check_grad(
        [](const std::vector<Tensor>& in) {
          return scaled_dot_product_attention_kv_packed(
                     in[0], in[1], AttentionMask::additive(in[2]) & AttentionMask::causal())
              .output;
        },
        {q, kv, m}, "kv packed, mask " + shape_str(ms));
  }
  for (const Shape& ms : mask_shapes(T, T)) {
    Tensor qkv = tgt::leaf({B, T, 3, NH, hs}), m = tgt::leaf(ms);
    tgt::check_grad(
        [](const std::vector<Tensor>& in) {
          return scaled_dot_product_attention_packed(
                     in[0], AttentionMask::additive(in[1]) & AttentionMask::causal())
              .output;
        },
        {qkv, m}, "packed qkv, mask " + shape_str(ms));
  }
}

TEST_CASE("two differentiable additive masks combined with & both get their gradient",
          "[attention][mask_grad]") {
  manual_seed(13);
  Tensor q = tgt::leaf({B, NH, T, hs}), k = tgt::leaf({B, NH, S, hs}),
         v = tgt::leaf({B, NH, S, hs}), m1 = tgt::leaf({T, S}), m2 = tgt::leaf({B, 1, T, S});
  tgt::check_grad(
      [](const std::vector<Tensor>& in) {
        return scaled_dot_product_attention(
                   in[0], in[1], in[2],
                   AttentionMask::additive(in[3]) & AttentionMask::additive(in[4]))
            .output;
      },
      {q, k, v, m1, m2}, "additive & additive");
}

TEST_CASE("fused dMask equals the composed softmax(scale*QK^T + m)V's, float32, several tiles",
          "[attention][mask_grad]") {
  // T = 150: three row tiles of the causal plan, the full mask path's one; float32 runs the
  // AVX-512 kernel where the CPU has it, OpenBLAS elsewhere.
  const int64_t b = 2, nh = 3, t = 150, d = 16;
  const double inf = std::numeric_limits<double>::infinity();
  for (const bool causal : {true, false}) {
    for (const Shape& ms : {Shape{t, t}, Shape{1, nh, t, t}, Shape{b, nh, t, t}}) {
      manual_seed(14);
      Tensor q = randn({b, nh, t, d}).requires_grad_(), k = randn({b, nh, t, d}).requires_grad_(),
             v = randn({b, nh, t, d}).requires_grad_(), m = randn(ms).requires_grad_();
      Tensor w = randn({b, nh, t, d});
      const AttentionMask st = causal ? AttentionMask::causal() : AttentionMask();
      Tensor out = scaled_dot_product_attention(q, k, v, AttentionMask::additive(m) & st).output;
      sum(mul(out, w)).backward();
      const Tensor gq = q.grad(), gk = k.grad(), gv = v.grad(), gm = m.grad();
      q.reset_grad(), k.reset_grad(), v.reset_grad(), m.reset_grad();

      Tensor s = add(mul(matmul(q, transpose(k, -2, -1)), 1.0 / std::sqrt(double(d))), m);
      if (causal) s = masked_fill(s, logical_not(st.dense_allowed(b, nh, t, t)), -inf);
      Tensor ref = matmul(softmax(s, -1), v);
      sum(mul(ref, w)).backward();
      const std::string what = fmt::format("mask {}{}", shape_str(ms), causal ? " causal" : "");
      REQUIRE(gm.shape() == ms);
      tgt::require_close(out, ref, 2e-5, 1e-4, what + " output");
      tgt::require_close(gm, m.grad(), 2e-5, 1e-4, what + " dMask");
      tgt::require_close(gq, q.grad(), 2e-5, 1e-4, what + " dq");
      tgt::require_close(gk, k.grad(), 2e-5, 1e-4, what + " dk");
      tgt::require_close(gv, v.grad(), 2e-5, 1e-4, what + " dv");
    }
  }
}

TEST_CASE("a constant additive mask stays constant: no gradient, no extra tape input",
          "[attention][mask_grad]") {
  manual_seed(15);
  Tensor q = tgt::leaf({B, NH, T, hs}), k = tgt::leaf({B, NH, S, hs}),
         v = tgt::leaf({B, NH, S, hs}), m = tgt::leaf({T, S});
  {
    Tensor out = scaled_dot_product_attention(q, k, v, AttentionMask::additive(m.detach())).output;
    REQUIRE(out.grad_fn()->next.size() == 3);
    sum(out).backward();
    REQUIRE_FALSE(m.grad().defined());
  }
  {
    Tensor out = scaled_dot_product_attention(q, k, v, AttentionMask::additive(m)).output;
    REQUIRE(out.grad_fn()->next.size() == 4);
    sum(out).backward();
    REQUIRE(m.grad().defined());
    REQUIRE(m.grad().shape() == Shape{T, S});
  }
  {
    NoGradGuard ng;
    Tensor out = scaled_dot_product_attention(q, k, v, AttentionMask::additive(m)).output;
    REQUIRE_FALSE(out.requires_grad());
  }
}
