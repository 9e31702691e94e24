// tests/ops/test_half_attention.cpp — the fused attention on bfloat16 / float16 operands: the
// softmax and every product in float32, the output and each operand's gradient rounded once, so
// each equals the float32 attention on the same (representable) values rounded once, bit for bit;
// every mask kind, the packed forms, grouped-query heads, need_weights. PyTorch 1.13 has no SDPA
// and its bf16 matmul/softmax round at every step: the float32 result rounded once is the better
// reference (docs/mixed-precision.md). These force the float32 products
// (TG_ATTENTION_BF16=float32); the bfloat16 dot products are tested in test_attention_bf16.cpp.
#include "helpers.hpp"

#include "ops/attention/attention.hpp"
#include "ops/attention/cpu/bf16.hpp"

using namespace tg;

namespace {
struct Float32Products {  // bfloat16 attention multiplies in float32 while one lives
  Float32Products() { cpu::set_attention_bf16(cpu::AttentionBf16::Float32); }
  ~Float32Products() { cpu::reset_attention_bf16(); }
};

std::vector<float> values(const Tensor& t) {
  return t.to(kFloat32).contiguous().to_vector<float>();
}

// f on reduced leaves and on float32 leaves of the same values: outputs and gradients, the
// float32 ones rounded once, must be equal.
void check_rounded_once(DType rt, const std::vector<Shape>& shapes,
                        const std::function<Tensor(const std::vector<Tensor>&)>& f) {
  const Float32Products forced;
  manual_seed(11);
  std::vector<Tensor> red, ref;
  for (const Shape& s : shapes) {
    Tensor x = randn(s).to(rt);
    red.push_back(x.clone().requires_grad_());
    ref.push_back(x.to(kFloat32).requires_grad_());
  }
  Tensor y = f(red), y32 = f(ref);
  REQUIRE(y.dtype() == rt);
  REQUIRE(values(y) == values(y32.to(rt)));
  const Tensor g = randn(y.shape()).to(rt);
  y.backward(g);
  y32.backward(g.to(kFloat32));
  for (size_t i = 0; i < red.size(); ++i) {
    INFO("operand " << i);
    REQUIRE(red[i].grad().dtype() == rt);
    REQUIRE(values(red[i].grad()) == values(ref[i].grad().to(rt)));
  }
}
}  // namespace

TEST_CASE("half attention: the fused SDPA rounds the float32 attention once, every mask kind") {
  const Tensor pad = tensor(std::vector<bool>{false, false, false, true, true, false, false, false,
                                              false, false, false, false},
                            {2, 6});
  const std::vector<std::pair<const char*, AttentionMask>> masks = {
      {"none", AttentionMask()},
      {"causal", AttentionMask::causal()},
      {"local(2,0)", AttentionMask::local(2, 0)},
      {"causal & padding",
       AttentionMask::causal() & AttentionMask::key_padding(pad, MaskPolarity::TrueBlocked)},
  };
  for (DType rt : {kBFloat16, kFloat16})
    for (const auto& [name, mask] : masks) {
      INFO(dtype_name(rt) << " mask " << name);
      const AttentionMask m = mask;
      check_rounded_once(rt, {{2, 3, 6, 8}, {2, 3, 6, 8}, {2, 3, 6, 8}},
                         [m](const std::vector<Tensor>& x) {
                           return scaled_dot_product_attention(x[0], x[1], x[2], m).output;
                         });
    }
}

TEST_CASE("half attention: packed, kv-packed, grouped-query and need_weights in bfloat16") {
  SDPAOptions causal_opts;
  causal_opts.is_causal = true;
  check_rounded_once(kBFloat16, {{2, 5, 3, 2, 4}}, [causal_opts](const std::vector<Tensor>& x) {
    return scaled_dot_product_attention_packed(x[0], {}, causal_opts).output;
  });
  check_rounded_once(kBFloat16, {{2, 5, 2, 4}, {2, 7, 2, 2, 4}}, [](const std::vector<Tensor>& x) {
    return scaled_dot_product_attention_kv_packed(x[0], x[1]).output;
  });
  SDPAOptions gqa;
  gqa.enable_gqa = true;
  check_rounded_once(
      kBFloat16, {{1, 4, 5, 8}, {1, 2, 5, 8}, {1, 2, 5, 8}}, [gqa](const std::vector<Tensor>& x) {
        return scaled_dot_product_attention(x[0], x[1], x[2], AttentionMask::causal(), gqa).output;
      });
  const Float32Products forced;
  manual_seed(3);
  const Tensor q = randn({1, 2, 4, 8}).to(kBFloat16);
  SDPAOptions w;
  w.need_weights = true;
  const AttentionResult r = scaled_dot_product_attention(q, q, q, AttentionMask::causal(), w);
  const Tensor q32 = q.to(kFloat32);
  const AttentionResult r32 =
      scaled_dot_product_attention(q32, q32, q32, AttentionMask::causal(), w);
  REQUIRE(r.weights.dtype() == kBFloat16);
  REQUIRE(values(r.weights) == values(r32.weights.to(kBFloat16)));
}
