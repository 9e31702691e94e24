// tests/cuda/test_parity_attention.cpp — scaled_dot_product_attention on the GPU (fused kernel,
// and the composed path for weights / large heads) against the float64 CPU, forward and
// backward, for every mask kind: none, causal (top-left, bottom-right), local windows, blocked
// windows (blocks not dividing T, look-back, causal inside), key padding, key lengths, bool and
// additive masks (constant, and differentiable: dMask), position biases (relative and ALiBi,
// with their gradients), T != S, T = 1, windows >= T, and fully masked rows (output 0, gradient
// 0). The mask kinds, additive masks and position biases also in bfloat16 and float16, against
// the CPU in the same dtype (parity_harness.hpp, run_parity_reduced).
#include "tests/cuda/parity_harness.hpp"

#include <limits>

using namespace tg;
using tgt::Inputs;
using tgt::ParityCase;

namespace {
struct AttnCase {
  std::string name;
  int64_t B, NH, T, S, hs, hsv;
  std::function<AttentionMask(int64_t B, int64_t T, int64_t S)> mask;
  bool need_weights = false;
};

// (B, S) bool, True = padding (PyTorch's key_padding_mask): batch b pads its last 3·b keys.
Tensor padding(int64_t B, int64_t S) {
  std::vector<bool> v(B * S);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < S; ++j) v[b * S + j] = j >= S - 3 * b;
  return tensor(v, {B, S});
}
// (T, S) bool, True = allowed, with row 1 fully blocked and a checkerboard elsewhere.
Tensor checker(int64_t T, int64_t S) {
  std::vector<bool> v(T * S);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < S; ++j) v[i * S + j] = i != 1 && ((i + j) % 3 != 0);
  return tensor(v, {T, S});
}
// (1, 1, T, S) additive: a distance penalty, -inf beyond distance 5.
Tensor additive(int64_t T, int64_t S, DType dt) {
  std::vector<double> v(T * S);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < S; ++j) {
      const int64_t d = std::abs(i - j);
      v[i * S + j] = d > 5 ? -std::numeric_limits<double>::infinity() : -0.1 * d;
    }
  return tensor(v, {1, 1, T, S}).to(dt);
}

std::vector<AttnCase> attn_cases() {
  using M = AttentionMask;
  auto none = [](int64_t, int64_t, int64_t) { return M(); };
  return {
      {"no mask, T = S = 37, hs 16", 2, 3, 37, 37, 16, 16, none},
      {"no mask, T != S, hs 64 / hs_v 32", 1, 2, 45, 70, 64, 32, none},
      {"causal top-left, hs 64", 2, 2, 70, 70, 64, 64,
       [](int64_t, int64_t, int64_t) { return M::causal(); }},
      {"causal bottom-right, T 5 < S 70", 1, 2, 5, 70, 32, 32,
       [](int64_t, int64_t, int64_t) { return M::causal(CausalAlign::BottomRight); }},
      {"decode step T = 1, bottom-right", 2, 2, 1, 33, 64, 64,
       [](int64_t, int64_t, int64_t) { return M::causal(CausalAlign::BottomRight); }},
      {"local (8, 0), T = 100", 1, 2, 100, 100, 32, 32,
       [](int64_t, int64_t, int64_t) { return M::local(8, 0); }},
      {"local (3, 2) bottom-right, T 20 S 33", 2, 1, 20, 33, 16, 16,
       [](int64_t, int64_t, int64_t) { return M::local(3, 2, CausalAlign::BottomRight); }},
      {"local window >= T equals full", 1, 2, 50, 50, 32, 32,
       [](int64_t, int64_t, int64_t) { return M::local(200, 200); }},
      {"causal & local (16, 0)", 1, 2, 90, 90, 64, 64,
       [](int64_t, int64_t, int64_t) { return M::causal() & M::local(16, 0); }},
      {"blocked 16, T = 70 (last block short)", 1, 2, 70, 70, 32, 32,
       [](int64_t, int64_t, int64_t) { return M::blocked(16); }},
      {"blocked 16, look_back 1, causal inside", 2, 1, 70, 70, 32, 32,
       [](int64_t, int64_t, int64_t) {
         BlockedOptions o;
         o.look_back = 1;
         o.causal = true;
         return M::blocked(16, o);
       }},
      {"key padding (B, S), TrueBlocked", 3, 2, 30, 30, 32, 32,
       [](int64_t B, int64_t, int64_t S) {
         return M::key_padding(padding(B, S), MaskPolarity::TrueBlocked);
       }},
      {"key lengths with a length-0 batch (all rows fully masked)", 3, 2, 12, 25, 16, 16,
       [](int64_t, int64_t, int64_t) {
         return M::key_lengths(tensor(std::vector<int64_t>{25, 0, 7}));
       }},
      {"bool (T, S) mask with a fully masked row", 2, 2, 19, 23, 16, 16,
       [](int64_t, int64_t T, int64_t S) {
         return M::from_bool(checker(T, S), MaskPolarity::TrueAllowed);
       }},
      {"causal & key padding", 2, 2, 40, 40, 64, 64,
       [](int64_t B, int64_t, int64_t S) {
         return M::causal() & M::key_padding(padding(B, S), MaskPolarity::TrueBlocked);
       }},
      {"head size 128", 1, 2, 64, 64, 128, 128,
       [](int64_t, int64_t, int64_t) { return M::causal(); }},
      {"head size 160: composed path", 1, 1, 20, 20, 160, 160,
       [](int64_t, int64_t, int64_t) { return M::causal(); }},
      {"need_weights: composed path", 2, 2, 17, 17, 16, 16,
       [](int64_t, int64_t, int64_t) { return M::local(4, 4); }, true},
  };
}
}  // namespace

// In bfloat16 and float16 (q, k, v rounded to dt on both sides) the output, the weights and every
// gradient are within 1 ulp of the CPU's float32 products (both run their float32 kernels on
// float32 copies and round once): the GPU's bfloat16 attention multiplies in float32, so the CPU
// side is held to TG_ATTENTION_BF16=float32 (main_cuda.cpp; its AVX512-BF16 dot products, which
// round P and dS to bfloat16, are tested against float32 in tests/ops/test_attention_bf16.cpp).
// Values below 2^-8 are compared in ulps at 2^-8 (ParityCase::half_floor): a gradient that is 0 in
// exact arithmetic (dq of a query row with one key) or tiny is the float32 kernels' cancellation
// error on each side, about 1e-7, which is many ulps of a tiny value.
TEST_CASE("cuda parity: scaled_dot_product_attention, every mask kind") {
  for (const AttnCase& a : attn_cases()) {
    for (DType dt : {kFloat64, kFloat32, kBFloat16, kFloat16}) {
      SECTION(a.name + " " + dtype_name(dt)) {
        ParityCase c;
        c.name = a.name;
        c.tol32 = 1e-4;
        c.half_floor = 1.0 / 256;
        c.inputs = [&a] {
          return Inputs{randn({a.B, a.NH, a.T, a.hs}, kFloat64),
                        randn({a.B, a.NH, a.S, a.hs}, kFloat64),
                        randn({a.B, a.NH, a.S, a.hsv}, kFloat64)};
        };
        c.fn = [&a](const Inputs& x) {
          SDPAOptions o;
          o.need_weights = a.need_weights;
          AttentionResult r =
              scaled_dot_product_attention(x[0], x[1], x[2], a.mask(a.B, a.T, a.S), o);
          return std::vector<Tensor>{r.output, r.weights};
        };
        tgt::run_parity_any(c, dt);
      }
    }
  }
}

TEST_CASE("cuda parity: heads-last and packed (B, T, 3, NH, hs) layouts") {
  // The fused kernels read and write every layout in place (kern::AttentionLayout); need_weights
  // takes the composed path on (B, NH, T, hs) views of the same inputs.
  for (DType dt : {kFloat64, kFloat32}) {
    for (bool weights : {false, true}) {
      ParityCase c;
      c.name = weights ? "heads_last, causal, need_weights (composed)" : "heads_last, causal";
      c.tol32 = 1e-4;
      c.inputs = [] {
        return Inputs{randn({2, 19, 3, 16}, kFloat64), randn({2, 23, 3, 16}, kFloat64),
                      randn({2, 23, 3, 8}, kFloat64)};
      };
      c.fn = [weights](const Inputs& x) {
        SDPAOptions o;
        o.heads_last = true;
        o.need_weights = weights;
        AttentionResult r = scaled_dot_product_attention(
            x[0], x[1], x[2], AttentionMask::causal(CausalAlign::BottomRight), o);
        return weights ? std::vector<Tensor>{r.output, r.weights} : std::vector<Tensor>{r.output};
      };
      tgt::run_parity(c, dt);
      ParityCase p;
      p.name = weights ? "packed, local(3, 1), need_weights (composed)" : "packed, local(3, 1)";
      p.tol32 = 1e-4;
      p.inputs = [] { return Inputs{randn({2, 21, 3, 2, 16}, kFloat64)}; };
      p.fn = [weights](const Inputs& x) {
        SDPAOptions o;
        o.need_weights = weights;
        AttentionResult r =
            scaled_dot_product_attention_packed(x[0], AttentionMask::local(3, 1), o);
        return weights ? std::vector<Tensor>{r.output, r.weights} : std::vector<Tensor>{r.output};
      };
      tgt::run_parity(p, dt);
      ParityCase kv;
      kv.name =
          weights ? "kv packed, key padding, need_weights (composed)" : "kv packed, key padding";
      kv.tol32 = 1e-4;
      kv.inputs = [] {
        return Inputs{randn({2, 17, 3, 16}, kFloat64), randn({2, 29, 2, 3, 16}, kFloat64)};
      };
      kv.fn = [weights](const Inputs& x) {
        SDPAOptions o;
        o.need_weights = weights;
        Tensor pad = zeros({2, 29}, kBool);
        pad.data<bool>()[5] = pad.data<bool>()[29 + 28] = true;
        AttentionResult r = scaled_dot_product_attention_kv_packed(
            x[0], x[1], AttentionMask::key_padding(pad, MaskPolarity::TrueBlocked), o);
        return weights ? std::vector<Tensor>{r.output, r.weights} : std::vector<Tensor>{r.output};
      };
      tgt::run_parity(kv, dt);
    }
  }
}

TEST_CASE("cuda: the fused attention reads heads-last and packed inputs in place") {
  // One tape node whose edges are the caller's tensors themselves: no transpose or copy between.
  Tensor qkv = randn({2, 21, 3, 2, 16}, kFloat32).to(tgt::gpu()).requires_grad_();
  Tensor out = scaled_dot_product_attention_packed(qkv, AttentionMask::causal()).output;
  REQUIRE(std::string(out.grad_fn()->op) == "scaled_dot_product_attention");
  REQUIRE(out.grad_fn()->next.size() == 1);
  CHECK(out.grad_fn()->next[0].leaf.get() == qkv.impl());
  CHECK(tg::shape_str(out.shape()) == "(2,21,2,16)");
  CHECK(out.is_contiguous());
  Tensor q = randn({2, 9, 2, 16}, kFloat32).to(tgt::gpu()).requires_grad_();
  SDPAOptions o;
  o.heads_last = true;
  Tensor o2 = scaled_dot_product_attention(q, q, q, AttentionMask(), o).output;
  REQUIRE(o2.grad_fn()->next.size() == 3);
  for (const auto& e : o2.grad_fn()->next) CHECK(e.leaf.get() == q.impl());
}

TEST_CASE("cuda parity: additive float mask with -inf entries") {
  for (DType dt : {kFloat64, kFloat32, kBFloat16, kFloat16}) {
    ParityCase c;
    c.name = "additive (1, 1, T, S)";
    c.tol32 = 1e-4;
    c.half_floor = 1.0 / 256;  // as in the mask-kind table above
    c.inputs = [] {
      return Inputs{randn({2, 2, 24, 16}, kFloat64), randn({2, 2, 24, 16}, kFloat64),
                    randn({2, 2, 24, 16}, kFloat64)};
    };
    c.fn = [](const Inputs& x) {
      AttentionMask m = AttentionMask::additive(additive(24, 24, x[0].dtype()));
      return std::vector<Tensor>{scaled_dot_product_attention(x[0], x[1], x[2], m).output};
    };
    tgt::run_parity_any(c, dt);
  }
}

TEST_CASE("cuda parity: a differentiable additive mask gets dScores summed to its shape") {
  // The mask is an input of the case: its gradient on the GPU (the composed path) is checked
  // against the CPU's fused one, for a (T, S) mask summed over B and NH and a (B, 1, T, S) one.
  for (DType dt : {kFloat64, kFloat32, kBFloat16, kFloat16}) {
    for (const Shape& ms : {Shape{24, 24}, Shape{2, 1, 24, 24}}) {
      ParityCase c;
      c.name = "differentiable additive " + shape_str(ms) + " & causal";
      c.tol32 = 1e-4;
      c.half_floor = 1.0 / 256;  // as in the mask-kind table above
      c.inputs = [ms] {
        return Inputs{randn({2, 2, 24, 16}, kFloat64), randn({2, 2, 24, 16}, kFloat64),
                      randn({2, 2, 24, 16}, kFloat64), randn(ms, kFloat64)};
      };
      c.fn = [](const Inputs& x) {
        AttentionMask m = AttentionMask::additive(x[3]) & AttentionMask::causal();
        return std::vector<Tensor>{scaled_dot_product_attention(x[0], x[1], x[2], m).output};
      };
      tgt::run_parity_any(c, dt);
    }
  }
}

TEST_CASE("cuda attention: error_on_fully_masked names batch, head and row") {
  Tensor q = randn({2, 1, 4, 8}).to(tgt::gpu());
  AttentionMask m = AttentionMask::key_lengths(tensor(std::vector<int64_t>{4, 0}));
  m.error_on_fully_masked(true);
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, q, q, m),
                    Catch::Contains("batch 1") && Catch::Contains("head 0"));
}

TEST_CASE("cuda attention: dropout runs on the composed path, seeded") {
  Tensor q = randn({2, 2, 16, 8}).to(tgt::gpu()).requires_grad_();
  SDPAOptions o;
  o.dropout_p = 0.2;
  manual_seed(3);
  Tensor a = scaled_dot_product_attention(q, q, q, AttentionMask::causal(), o).output;
  manual_seed(3);
  Tensor b = scaled_dot_product_attention(q, q, q, AttentionMask::causal(), o).output;
  CHECK(a.to_vector<float>() == b.to_vector<float>());
  sum(a).backward();
  for (float g : q.grad().to_vector<float>()) CHECK(std::isfinite(g));
}

TEST_CASE("cuda parity: grouped- and multi-query attention (enable_gqa) in every layout") {
  // The fused dK/dV kernel sums each group's query heads in one block; the composed path
  // (need_weights) repeats k and v. Both against the CPU, whose kernel reads k and v in place.
  using M = AttentionMask;
  for (DType dt : {kFloat64, kFloat32})
    for (bool weights : {false, true}) {
      const std::string w = weights ? ", need_weights (composed)" : "";
      ParityCase c;
      c.name = "gqa 6 query / 2 kv heads, causal, several tiles" + w;
      c.tol32 = 1e-4;
      c.inputs = [] {
        return Inputs{randn({2, 6, 70, 32}, kFloat64), randn({2, 2, 70, 32}, kFloat64),
                      randn({2, 2, 70, 16}, kFloat64)};
      };
      c.fn = [weights](const Inputs& x) {
        SDPAOptions o;
        o.enable_gqa = true;
        o.need_weights = weights;
        AttentionResult r = scaled_dot_product_attention(x[0], x[1], x[2], M::causal(), o);
        return weights ? std::vector<Tensor>{r.output, r.weights} : std::vector<Tensor>{r.output};
      };
      tgt::run_parity(c, dt);
      ParityCase h;
      h.name = "mqa heads last, 4 query / 1 kv head, local(5, 0) bottom-right" + w;
      h.tol32 = 1e-4;
      h.inputs = [] {
        return Inputs{randn({2, 19, 4, 16}, kFloat64), randn({2, 40, 1, 16}, kFloat64),
                      randn({2, 40, 1, 16}, kFloat64)};
      };
      h.fn = [weights](const Inputs& x) {
        SDPAOptions o;
        o.enable_gqa = true;
        o.heads_last = true;
        o.need_weights = weights;
        AttentionResult r = scaled_dot_product_attention(
            x[0], x[1], x[2], M::local(5, 0, CausalAlign::BottomRight), o);
        return weights ? std::vector<Tensor>{r.output, r.weights} : std::vector<Tensor>{r.output};
      };
      tgt::run_parity(h, dt);
      ParityCase kv;
      kv.name = "gqa kv packed, 4 query / 2 kv heads, key padding" + w;
      kv.tol32 = 1e-4;
      kv.inputs = [] {
        return Inputs{randn({2, 17, 4, 16}, kFloat64), randn({2, 29, 2, 2, 16}, kFloat64)};
      };
      kv.fn = [weights](const Inputs& x) {
        SDPAOptions o;
        o.enable_gqa = true;
        o.need_weights = weights;
        Tensor pad = zeros({2, 29}, kBool);
        pad.data<bool>()[3] = pad.data<bool>()[29 + 20] = true;
        AttentionResult r = scaled_dot_product_attention_kv_packed(
            x[0], x[1], M::key_padding(pad, MaskPolarity::TrueBlocked), o);
        return weights ? std::vector<Tensor>{r.output, r.weights} : std::vector<Tensor>{r.output};
      };
      tgt::run_parity(kv, dt);
    }
}

namespace {
struct BiasCase {
  std::string name;
  int64_t B, NH, NKV, T, S, hs;
  Shape table;  // (NH or 1, buckets); {} for none
  bool bidirectional, alibi, heads_last, need_weights;
  std::function<AttentionMask(int64_t B, int64_t T, int64_t S)> structure;
};
}  // namespace

TEST_CASE("cuda parity: a learned relative-position bias and ALiBi, fused on the GPU") {
  // The fused kernels add the biases per entry and sum their gradients per diagonal
  // (bias_diag_kernel in attention_backward); the CPU adds them per key in its fused kernel. Both
  // differentiate q, k, v, the table and the slopes. Several query and key tiles (64 rows), several
  // diagonal chunks (64 diagonals), buckets past max_distance, grouped heads, heads last, padding
  // and an additive mask beside the biases; need_weights takes the composed path (the bias made
  // dense).
  using M = AttentionMask;
  auto none = [](int64_t, int64_t, int64_t) { return M(); };
  const std::vector<BiasCase> cases = {
      {"t5 (unidirectional) + alibi, causal bottom-right, T 9 < S 13",
       2,
       2,
       2,
       9,
       13,
       16,
       {2, 8},
       false,
       true,
       false,
       false,
       [](int64_t, int64_t, int64_t) { return M::causal(CausalAlign::BottomRight); }},
      {"shared bidirectional t5 table (1, 32), T = S = 150 (past max_distance 128)",
       1,
       2,
       2,
       150,
       150,
       32,
       {1, 32},
       true,
       false,
       false,
       false,
       none},
      {"alibi + local (8, 0), grouped heads 4 / 2, T = S = 80",
       2,
       4,
       2,
       80,
       80,
       16,
       {},
       false,
       true,
       false,
       false,
       [](int64_t, int64_t, int64_t) { return M::local(8, 0); }},
      {"t5 + key padding + additive distance mask, heads last, T 40 S 70",
       2,
       2,
       2,
       40,
       70,
       32,
       {2, 16},
       true,
       false,
       true,
       false,
       [](int64_t B, int64_t T, int64_t S) {
         return M::key_padding(padding(B, S), MaskPolarity::TrueBlocked) &
                M::additive(additive(T, S, kFloat64));
       }},
      {"t5 + alibi, head size 128, causal",
       1,
       2,
       2,
       70,
       70,
       128,
       {2, 8},
       false,
       true,
       false,
       false,
       [](int64_t, int64_t, int64_t) { return M::causal(); }},
      {"t5 + alibi, need_weights (composed)",
       1,
       2,
       2,
       20,
       20,
       16,
       {2, 8},
       true,
       true,
       false,
       true,
       [](int64_t, int64_t, int64_t) { return M::causal(); }},
  };
  for (const BiasCase& a : cases)
    for (DType dt : {kFloat64, kFloat32, kBFloat16, kFloat16}) {
      SECTION(a.name + " " + dtype_name(dt)) {
        ParityCase c;
        c.name = a.name;
        c.tol32 = 1e-4;
        c.half_floor = 1.0 / 256;  // as in the mask-kind table above
        c.inputs = [&a] {
          const Shape q = a.heads_last ? Shape{a.B, a.T, a.NH, a.hs} : Shape{a.B, a.NH, a.T, a.hs};
          const Shape k =
              a.heads_last ? Shape{a.B, a.S, a.NKV, a.hs} : Shape{a.B, a.NKV, a.S, a.hs};
          Inputs x{randn(q, kFloat64), randn(k, kFloat64), randn(k, kFloat64)};
          if (!a.table.empty()) x.push_back(randn(a.table, kFloat64));
          if (a.alibi) x.push_back(mul(M::alibi_slopes(a.NH, kFloat64), 4.0));
          return x;
        };
        c.fn = [&a](const Inputs& x) {
          // the additive part in the case's dtype (the harness rounds inputs, not the mask)
          M m = a.structure(a.B, a.T, a.S);
          if (m.additive_part().defined())
            m = m.with_additive(m.additive_part().to(x[0].dtype()).to(x[0].device()));
          size_t i = 3;  // the table, then the slopes, when the case has them
          if (!a.table.empty()) m = m & M::relative_bias(x[i++], a.bidirectional, 128);
          if (a.alibi) m = m & M::alibi(x[i]);
          SDPAOptions o;
          o.enable_gqa = a.NKV != a.NH;
          o.heads_last = a.heads_last;
          o.need_weights = a.need_weights;
          AttentionResult r = scaled_dot_product_attention(x[0], x[1], x[2], m, o);
          return a.need_weights ? std::vector<Tensor>{r.output, r.weights}
                                : std::vector<Tensor>{r.output};
        };
        tgt::run_parity_any(c, dt);
      }
    }
}

TEST_CASE("cuda parity: position biases at special values") {
  // A NaN query entry (its row NaN), a row of zeros and -0, subnormals in k, at head size 37 (the
  // CPU's SIMD body and tail) and 70 keys (several tiles and diagonal chunks): the fused kernels
  // with a relative bias and ALiBi give the CPU's values and gradients, NaN where the CPU has NaN.
  // The NaN row's causal span is one whole SIMD batch: the CPU's softmax runs over a row's span
  // widened to whole batches, and a NaN row is NaN over the widening too (blocked keys that CUDA
  // leaves at P = 0).
  using M = AttentionMask;
  for (DType dt : {kFloat64, kFloat32}) {
    ParityCase c;
    c.name = "t5 + alibi, causal, special values";
    c.tol32 = 1e-4;
    c.inputs = [dt] {
      Tensor q = randn({1, 2, 70, 37}, kFloat64), k = randn({1, 2, 70, 37}, kFloat64),
             v = randn({1, 2, 70, 37}, kFloat64);
      const double sub = dt == kFloat64 ? 4.9e-322 : 2.8e-44;
      double *pq = q.data<double>(), *pk = k.data<double>();
      pq[15 * 37 + 5] = NAN;  // row 15: its causal span is 16 keys, one whole SIMD batch
      for (int64_t c = 0; c < 37; ++c) pq[10 * 37 + c] = c % 2 ? -0.0 : 0.0;
      for (int64_t e = 0; e < 70 * 37; e += 7) pk[e] = e % 2 ? sub : -sub;
      return Inputs{q, k, v, randn({2, 8}, kFloat64), tensor(std::vector<double>{0.5, 0.25}, {2})};
    };
    c.fn = [](const Inputs& x) {
      const M m = M::causal() & M::relative_bias(x[3], false, 16) & M::alibi(x[4]);
      return std::vector<Tensor>{scaled_dot_product_attention(x[0], x[1], x[2], m).output};
    };
    tgt::run_parity(c, dt);
  }
}

TEST_CASE("cuda: position biases take the fused kernel, one node with the table's edge") {
  Tensor q = randn({1, 2, 30, 16}, kFloat32).to(tgt::gpu()).requires_grad_();
  Tensor table = randn({2, 8}, kFloat32).to(tgt::gpu()).requires_grad_();
  Tensor slopes = AttentionMask::alibi_slopes(2).to(tgt::gpu()).requires_grad_();
  const AttentionMask m = AttentionMask::causal() & AttentionMask::relative_bias(table, false, 16) &
                          AttentionMask::alibi(slopes);
  Tensor out = scaled_dot_product_attention(q, q, q, m).output;
  REQUIRE(std::string(out.grad_fn()->op) == "scaled_dot_product_attention");
  REQUIRE(out.grad_fn()->next.size() == 5);
  CHECK(out.grad_fn()->next[3].leaf.get() == table.impl());
  CHECK(out.grad_fn()->next[4].leaf.get() == slopes.impl());
  // Only the table requires grad: the node still gives it its gradient.
  Tensor qc = q.detach();
  Tensor out2 = scaled_dot_product_attention(qc, qc, qc, m).output;
  sum(out2).backward();
  REQUIRE(table.grad().defined());
  CHECK(table.grad().device() == tgt::gpu());
  double n = 0;
  for (float g : table.grad().to_vector<float>()) n += std::fabs(g);
  CHECK(n > 0);
}
