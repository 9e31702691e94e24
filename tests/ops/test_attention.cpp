// tests/ops/test_attention.cpp — functional attention: the fused, tiled
// scaled_dot_product_attention against a naive dense reference composed from ops (outputs and dq,
// dk, dv) for every mask kind, the same masks given densely, gradchecks, fully masked rows,
// weights, the probe, dropout, float32 (on the AVX-512 kernel and on OpenBLAS), the packed forms,
// the seed attention(), additive attention, errors and a long local-window run.
#include "helpers.hpp"

#include "ops/attention/attention.hpp"
#include "ops/core/cpu/kernels.hpp"

#include <chrono>
#include <cmath>
#include <limits>

using namespace tg;

namespace {
const double kInf = std::numeric_limits<double>::infinity();

// The naive reference: S = scale·q·kᵀ + additive, blocked -> -inf (dense_allowed), softmax (an
// all -inf row gives 0), P·v. Returns (output, P).
std::pair<Tensor, Tensor> reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionMask& m, double scale = -1) {
  const int64_t B = q.size(0), NH = q.size(1), T = q.size(2), S = k.size(2);
  if (scale < 0) scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  Tensor s = matmul(q, k.transpose(-2, -1)) * scale;
  if (m.additive_part().defined()) s = s + m.additive_part().to(q.dtype());
  if (!m.is_none()) s = masked_fill(s, logical_not(m.dense_allowed(B, NH, T, S)), -kInf);
  Tensor p = softmax(s, -1);
  return {matmul(p, v), p};
}

struct Case {
  std::string name;
  AttentionMask mask;
  int64_t T, S;
};

Tensor bool_tensor(const Shape& s, double p_true, uint64_t seed) {
  manual_seed(seed);
  return lt(rand(s, kFloat64), full({}, p_true, kFloat64));
}

// Every mask kind, for B = 2, NH = 2.
std::vector<Case> mask_cases() {
  using A = AttentionMask;
  const CausalAlign BR = CausalAlign::BottomRight;
  Tensor pad = tensor(std::vector<bool>{false, false, true, false, true, false, false, true, true,
                                        true, false, false},
                      {2, 6});  // TrueBlocked
  Tensor pad_tail = tensor(std::vector<bool>{false, false, false, true, true, true, false, false,
                                             false, false, false, true},
                           {2, 6});
  Tensor add = randn({5, 6}, kFloat64);
  add.data<double>()[3] = -kInf;
  add.data<double>()[7] = -kInf;
  return {
      {"none", A(), 5, 5},
      {"none T<S", A(), 4, 7},
      {"causal", A::causal(), 6, 6},
      {"causal T<S", A::causal(), 4, 7},
      {"causal T>S", A::causal(), 7, 4},
      {"causal bottom-right T<S", A::causal(BR), 4, 7},
      {"causal bottom-right T>S", A::causal(BR), 7, 4},
      {"local(1,1)", A::local(1, 1), 6, 6},
      {"local(0,0)", A::local(0, 0), 6, 6},
      {"local(2,0)", A::local(2, 0), 6, 6},
      {"local(0,2)", A::local(0, 2), 6, 6},
      {"local(10,10) = full", A::local(10, 10), 6, 6},
      {"local(1,1) bottom-right T<S", A::local(1, 1, BR), 4, 7},
      {"causal & local(2,5)", A::causal() & A::local(2, 5), 6, 6},
      {"blocked(2)", A::blocked(2), 6, 6},
      {"blocked(4) not dividing", A::blocked(4), 6, 6},
      {"blocked(2) look_back 1", A::blocked(2, {1, 0, false}), 6, 6},
      {"blocked(3) look_back 1 causal", A::blocked(3, {1, 0, true}), 7, 7},
      {"blocked(2) look_ahead 1", A::blocked(2, {0, 1, false}), 5, 5},
      {"six blocked parts (past the kernels' slots)",
       A::blocked(2, {1, 0, false}) & A::blocked(3, {1, 1, false}) & A::blocked(4) &
           A::blocked(5, {0, 1, false}) & A::blocked(6, {1, 0, true}) & A::blocked(7),
       12, 12},
      {"key_padding", A::key_padding(pad, MaskPolarity::TrueBlocked), 5, 6},
      {"key_lengths", A::key_lengths(tensor(std::vector<int64_t>{3, 6})), 5, 6},
      {"padding + window: fully masked rows",
       A::local(1, 0) & A::key_padding(pad_tail, MaskPolarity::TrueBlocked), 6, 6},
      {"bool TrueAllowed (T,S)",
       A::from_bool(bool_tensor({5, 6}, 0.6, 3), MaskPolarity::TrueAllowed), 5, 6},
      {"bool TrueBlocked (B,1,T,S)",
       A::from_bool(bool_tensor({2, 1, 5, 6}, 0.4, 4), MaskPolarity::TrueBlocked), 5, 6},
      {"additive (T,S)", A::additive(add), 5, 6},
      {"additive (B,NH,T,S) & causal", A::additive(randn({2, 2, 5, 5}, kFloat64)) & A::causal(), 5,
       5},
      {"T = 1", A::causal(BR), 1, 5},
      {"T = 1, local", A::local(1, 0, BR), 1, 5},
  };
}

struct Run {
  Tensor out, dq, dk, dv;
};
Run run_sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMask& m,
             const Tensor& dO) {
  Tensor out = scaled_dot_product_attention(q, k, v, m).output;
  std::vector<Tensor> g = tg::grad({out}, {q, k, v}, {dO});
  return {out, g[0], g[1], g[2]};
}
Run run_reference(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMask& m,
                  const Tensor& dO) {
  Tensor out = reference(q, k, v, m).first;
  std::vector<Tensor> g = tg::grad({out}, {q, k, v}, {dO});
  return {out, g[0], g[1], g[2]};
}
void require_runs_close(const Run& a, const Run& b, double tol, const std::string& what) {
  tgt::require_close(a.out, b.out, tol, 0, what + ": output");
  tgt::require_close(a.dq, b.dq, tol, 0, what + ": dq");
  tgt::require_close(a.dk, b.dk, tol, 0, what + ": dk");
  tgt::require_close(a.dv, b.dv, tol, 0, what + ": dv");
}
bool all_finite(const Tensor& t) {
  for (double x : t.to_vector<double>())
    if (!std::isfinite(x)) return false;
  return true;
}
}  // namespace

TEST_CASE("SDPA matches the dense reference for every mask kind, values and gradients",
          "[attention]") {
  manual_seed(101);
  for (const Case& c : mask_cases()) {
    Tensor q = tgt::leaf({2, 2, c.T, 3}), k = tgt::leaf({2, 2, c.S, 3}),
           v = tgt::leaf({2, 2, c.S, 4});
    Tensor dO = randn({2, 2, c.T, 4}, kFloat64);
    Run fast = run_sdpa(q, k, v, c.mask, dO);
    require_runs_close(fast, run_reference(q, k, v, c.mask, dO), 1e-10, c.name);
    REQUIRE(all_finite(fast.dq));
    // The same mask given densely (bool, plus the additive part) takes the full-range path.
    AttentionMask dense =
        AttentionMask::from_bool(c.mask.dense_allowed(2, 2, c.T, c.S), MaskPolarity::TrueAllowed);
    if (c.mask.additive_part().defined())
      dense = dense & AttentionMask::additive(c.mask.additive_part());
    require_runs_close(run_sdpa(q, k, v, dense, dO), fast, 1e-10, c.name + " dense vs fast");
  }
}

TEST_CASE("SDPA over several row tiles (T > 64) matches the reference", "[attention]") {
  manual_seed(102);
  using A = AttentionMask;
  for (const Case& c :
       {Case{"local(5,3)", A::local(5, 3), 150, 150}, Case{"causal", A::causal(), 130, 130},
        Case{"blocked(32) look_back 1 causal", A::blocked(32, {1, 0, true}), 140, 140},
        Case{"local(4,0) bottom-right T<S", A::local(4, 0, CausalAlign::BottomRight), 100, 170},
        Case{"none", A(), 70, 90}}) {
    Tensor q = tgt::leaf({1, 2, c.T, 4}), k = tgt::leaf({1, 2, c.S, 4}),
           v = tgt::leaf({1, 2, c.S, 3});
    Tensor dO = randn({1, 2, c.T, 3}, kFloat64);
    require_runs_close(run_sdpa(q, k, v, c.mask, dO), run_reference(q, k, v, c.mask, dO), 1e-10,
                       c.name);
  }
}

TEST_CASE("SDPA with heads last (B, T, NH, hs) equals the (B, NH, T, hs) layout exactly",
          "[attention]") {
  // The same rows through other leading dimensions: the same numbers, bit for bit, for outputs,
  // gradients, weights, the probe and dropout (drawn in the same order), float64 and float32.
  manual_seed(109);
  std::vector<Case> cases = mask_cases();
  cases.push_back({"causal, several tiles", AttentionMask::causal(), 70, 70});
  cases.push_back({"none, several tiles", AttentionMask(), 300, 20});
  for (DType dt : {kFloat64, kFloat32})
    for (const Case& c : cases) {
      const int64_t NH = c.mask.has_data() ? 2 : 3;  // mask tensors are made for B = NH = 2
      Tensor q = randn({2, NH, c.T, 4}, dt).requires_grad_(),
             k = randn({2, NH, c.S, 4}, dt).requires_grad_(),
             v = randn({2, NH, c.S, 5}, dt).requires_grad_();
      Tensor dO = randn({2, NH, c.T, 5}, dt);
      AttentionProbe probe;
      Tensor S1, P1, dP1, dS1;
      probe.on_forward = [&](const Tensor& s, const Tensor& p) { S1 = s, P1 = p; };
      probe.on_backward = [&](const Tensor& dp, const Tensor& ds) { dP1 = dp, dS1 = ds; };
      SDPAOptions o;
      o.need_weights = true;
      o.probe = &probe;
      o.dropout_p = 0.25;
      manual_seed(7);
      AttentionResult a = scaled_dot_product_attention(q, k, v, c.mask, o);
      std::vector<Tensor> ga = tg::grad({a.output}, {q, k, v}, {dO});
      const Tensor S0 = S1, P0 = P1, dP0 = dP1, dS0 = dS1;
      o.heads_last = true;
      manual_seed(7);
      AttentionResult b = scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                       v.transpose(1, 2), c.mask, o);
      REQUIRE(b.output.shape() == Shape{2, c.T, NH, 5});
      std::vector<Tensor> gb = tg::grad({b.output.transpose(1, 2)}, {q, k, v}, {dO});
      const std::string what = c.name + (dt == kFloat32 ? " float32" : " float64");
      // bit for bit (-inf scores included, which require_close cannot compare)
      auto same = [&](const Tensor& x, const Tensor& y, const std::string& name) {
        INFO(what << ": " << name << " " << shape_str(x.shape()));
        REQUIRE(x.shape() == y.shape());
        std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>();
        size_t bad = 0;
        for (size_t e = 0; e < xv.size(); ++e)
          bad += !(xv[e] == yv[e] || (std::isnan(xv[e]) && std::isnan(yv[e])));
        REQUIRE(bad == 0);
      };
      same(b.output.transpose(1, 2), a.output, "output");
      same(b.weights, a.weights, "weights");
      for (int i = 0; i < 3; ++i) same(gb[i], ga[i], "grad " + std::to_string(i));
      same(S1, S0, "probe scores");
      same(P1, P0, "probe probs");
      same(dP1, dP0, "probe dprobs");
      same(dS1, dS0, "probe dscores");
    }
  // Shapes are read in that layout, and errors say so.
  SDPAOptions hl;
  hl.heads_last = true;
  Tensor q = zeros({2, 4, 2, 3}, kFloat64), k = zeros({2, 5, 2, 3}, kFloat64);
  REQUIRE_ERROR(scaled_dot_product_attention(q, k, zeros({2, 6, 2, 3}, kFloat64), {}, hl),
                "key length S of k (5) and v (6) differ");
  REQUIRE_ERROR(scaled_dot_product_attention(q, zeros({2, 5, 1, 3}, kFloat64),
                                             zeros({2, 5, 2, 3}, kFloat64), {}, hl),
                "head counts of k (1) and v (2) differ (heads_last: (B, S, NH, hs))");
}

// The float32 products run on our AVX-512 kernel where the CPU has it
// (ops/attention/cpu/gemm_avx512.cpp) and on OpenBLAS otherwise: both against each other and
// against float64, for every mask kind, both layouts, head sizes off the 16-float batch, several
// tiles, long key rows (the transposed dV/dK form), dropout, need_weights, and the packed forms.
TEST_CASE("SDPA float32: the AVX-512 kernel equals OpenBLAS and float64", "[attention]") {
  struct Restore {
    ~Restore() { cpu::reset_simd_kernels(); }
  } restore;
  const bool have = cpu::set_simd_kernels(true);
  if (!have) WARN("no AVX-512 kernels on this CPU or build: OpenBLAS against float64 only");
  using A = AttentionMask;
  std::vector<Case> cases = mask_cases();
  cases.push_back({"none, long rows", A(), 300, 300});
  cases.push_back({"causal, several tiles", A::causal(), 300, 300});
  cases.push_back({"local(40,0), long rows", A::local(40, 0), 300, 300});
  cases.push_back({"none, cross T<S long", A(), 70, 290});
  struct Out {
    Tensor o, w, dq, dk, dv;
  };
  for (bool heads_last : {false, true})
    for (const Case& c : cases)
      for (auto [hs, hsv] : {std::pair<int64_t, int64_t>{20, 24}, {32, 32}}) {
        const int64_t B = 2, NH = 2;
        manual_seed(120);
        auto shape = [&](int64_t n, int64_t w) {
          return heads_last ? Shape{B, n, NH, w} : Shape{B, NH, n, w};
        };
        Tensor q64 = randn(shape(c.T, hs), kFloat64), k64 = randn(shape(c.S, hs), kFloat64),
               v64 = randn(shape(c.S, hsv), kFloat64), dO64 = randn(shape(c.T, hsv), kFloat64);
        SDPAOptions o;
        o.heads_last = heads_last;
        o.need_weights = true;
        auto run = [&](DType dt, bool avx512) {
          REQUIRE(cpu::set_simd_kernels(avx512) == (avx512 ? have : true));
          Tensor q = q64.to(dt).requires_grad_(), k = k64.to(dt).requires_grad_(),
                 v = v64.to(dt).requires_grad_();
          AttentionResult r = scaled_dot_product_attention(q, k, v, c.mask, o);
          std::vector<Tensor> g = tg::grad({r.output}, {q, k, v}, {dO64.to(dt)});
          return Out{r.output, r.weights, g[0], g[1], g[2]};
        };
        const Out ref = run(kFloat64, false), blas = run(kFloat32, false);
        const std::string what =
            fmt::format("{} hs {} hs_v {}{}", c.name, hs, hsv, heads_last ? " heads_last" : "");
        auto near = [&](const Out& a, const Out& b, double tol, const std::string& w) {
          tgt::require_close(a.o, b.o, tol, tol, w + ": output");
          tgt::require_close(a.w, b.w, tol, tol, w + ": weights");
          tgt::require_close(a.dq, b.dq, tol, tol, w + ": dq");
          tgt::require_close(a.dk, b.dk, tol, tol, w + ": dk");
          tgt::require_close(a.dv, b.dv, tol, tol, w + ": dv");
        };
        near(blas, ref, 2e-5, what + " OpenBLAS f32 against f64");
        if (!have) continue;
        const Out fast = run(kFloat32, true);
        near(fast, ref, 2e-5, what + " AVX-512 f32 against f64");
        near(fast, blas, 2e-5, what + " AVX-512 against OpenBLAS");
      }
  // the heads run in parallel on both products (OpenBLAS on the calling thread, the AVX-512
  // kernel): the same bits at 1 and 3 threads, in both dtypes, layouts and for local masks; and a
  // fully masked row's error still names the first such row
  {
    const int before = get_num_threads();
    for (int avx512 : {0, 1}) {
      if (avx512 && !have) continue;
      REQUIRE(cpu::set_simd_kernels(avx512 == 1));
      for (DType dt : {kFloat32, kFloat64})
        for (bool hl : {false, true})
          for (const AttentionMask& m : {AttentionMask::causal(), AttentionMask::local(20, 5)}) {
            SDPAOptions o;
            o.heads_last = hl;
            const Shape qs = hl ? Shape{2, 70, 3, 16} : Shape{2, 3, 70, 16},
                        ks = hl ? Shape{2, 90, 3, 16} : Shape{2, 3, 90, 16},
                        vs = hl ? Shape{2, 90, 3, 24} : Shape{2, 3, 90, 24};
            manual_seed(5);
            Tensor q = randn(qs, dt), k = randn(ks, dt), v = randn(vs, dt);
            std::vector<double> got[2];
            for (int i = 0; i < 2; ++i) {
              set_num_threads(i == 0 ? 1 : 3);
              Tensor qq = q.detach().requires_grad_(), kk = k.detach().requires_grad_(),
                     vv = v.detach().requires_grad_();
              Tensor out = scaled_dot_product_attention(qq, kk, vv, m, o).output;
              std::vector<Tensor> g = tg::grad({out}, {qq, kk, vv}, {ones_like(out)});
              for (const Tensor& t : {out, g[0], g[1], g[2]})
                for (double x : t.to_vector<double>()) got[i].push_back(x);
            }
            INFO(cpu::simd_kernels()
                 << " " << dtype_name(dt) << (hl ? " heads_last " : " ") << m.name());
            REQUIRE(got[0] == got[1]);
          }
      Tensor q = randn({2, 3, 70, 16}), k = randn({2, 3, 90, 16}), v = randn({2, 3, 90, 24});
      Tensor lens = tensor(std::vector<int64_t>{5, 0});  // batch 1: no key at all
      AttentionMask none_allowed = AttentionMask::key_lengths(lens);
      set_num_threads(3);
      REQUIRE_ERROR(scaled_dot_product_attention(q, k, v, none_allowed.error_on_fully_masked()),
                    "row 0 of batch 1, head 0 has no allowed key");
    }
    set_num_threads(before);
    REQUIRE(cpu::set_simd_kernels(true) == have);
  }
  // dropout: the same mask drawn (same seed), the same result on both
  if (have) {
    Tensor q = randn({2, 3, 70, 16}), k = randn({2, 3, 200, 16}), v = randn({2, 3, 200, 16});
    SDPAOptions o;
    o.dropout_p = 0.3;
    o.training = true;
    std::vector<Tensor> res[2];
    for (int avx512 : {0, 1}) {
      REQUIRE(cpu::set_simd_kernels(avx512 == 1));
      manual_seed(121);
      Tensor qq = q.detach().requires_grad_(), kk = k.detach().requires_grad_(),
             vv = v.detach().requires_grad_();
      Tensor out = scaled_dot_product_attention(qq, kk, vv, AttentionMask::causal(), o).output;
      res[avx512] = tg::grad({out}, {qq, kk, vv}, {ones_like(out)});
      res[avx512].push_back(out);
    }
    for (size_t i = 0; i < 4; ++i)
      tgt::require_close(res[1][i], res[0][i], 2e-5, 2e-5, fmt::format("dropout, tensor {}", i));
  }
}

TEST_CASE("packed SDPA on qkv (B, T, 3, NH, hs) equals three heads-last tensors", "[attention]") {
  manual_seed(110);
  using A = AttentionMask;
  Tensor pad = tensor(std::vector<bool>{false, false, true, false, true, false, false, false, false,
                                        false, false, true},
                      {2, 6});
  for (DType dt : {kFloat64, kFloat32})
    for (const Case& c : {Case{"none", A(), 6, 6}, Case{"causal", A::causal(), 6, 6},
                          Case{"key_padding", A::key_padding(pad, MaskPolarity::TrueBlocked), 6, 6},
                          Case{"local(2,1)", A::local(2, 1), 6, 6},
                          Case{"causal, several tiles", A::causal(), 150, 150},
                          Case{"none, several tiles", A(), 300, 300}}) {
      const int64_t B = 2, T = c.T, NH = 3, hs = 4;
      Tensor qkv = randn({B, T, 3, NH, hs}, dt).requires_grad_();
      Tensor dO = randn({B, T, NH, hs}, dt);
      SDPAOptions o;
      o.need_weights = true;
      AttentionResult a = scaled_dot_product_attention_packed(qkv, c.mask, o);
      Tensor ga = tg::grad({a.output}, {qkv}, {dO})[0];
      o.heads_last = true;
      auto part = [&](int64_t i) { return reshape(narrow(qkv, 2, i, 1), {B, T, NH, hs}); };
      AttentionResult b = scaled_dot_product_attention(part(0), part(1), part(2), c.mask, o);
      Tensor gb = tg::grad({b.output}, {qkv}, {dO})[0];
      const std::string what = c.name + (dt == kFloat32 ? " float32" : " float64");
      const double tol = dt == kFloat32 ? 1e-6 : 1e-13;
      REQUIRE(a.output.shape() == Shape{B, T, NH, hs});
      tgt::require_close(a.output, b.output, tol, 0, what + ": output");
      tgt::require_close(a.weights, b.weights, tol, 0, what + ": weights");
      tgt::require_close(ga, gb, tol, 0, what + ": d(qkv)");
    }
  manual_seed(111);
  Tensor qkv = tgt::leaf({2, 5, 3, 2, 3});
  tgt::check_grad(
      [](const std::vector<Tensor>& in) {
        return scaled_dot_product_attention_packed(in[0], AttentionMask::causal()).output;
      },
      {qkv}, "packed sdpa causal");
  REQUIRE_ERROR(scaled_dot_product_attention_packed(zeros({2, 5, 2, 2, 3}, kFloat64)),
                "scaled_dot_product_attention: qkv (2,5,2,2,3): expected (B, T, 3, NH, hs)");
}

TEST_CASE("kv-packed SDPA on q (B, T, NH, hs), kv (B, S, 2, NH, hs) equals heads-last tensors",
          "[attention]") {
  manual_seed(112);
  using A = AttentionMask;
  Tensor pad = tensor(std::vector<bool>{false, false, true, false, true, false, false, false, false,
                                        false, false, true, false, false},
                      {2, 7});
  for (DType dt : {kFloat64, kFloat32})
    for (const Case& c : {Case{"none", A(), 5, 7}, Case{"causal", A::causal(), 5, 7},
                          Case{"key_padding", A::key_padding(pad, MaskPolarity::TrueBlocked), 5, 7},
                          Case{"local(2,1)", A::local(2, 1), 5, 7},
                          Case{"causal, several tiles", A::causal(), 150, 140},
                          Case{"none, several tiles", A(), 300, 290}}) {
      const int64_t B = 2, T = c.T, S = c.S, NH = 3, hs = 4;
      Tensor q = randn({B, T, NH, hs}, dt).requires_grad_();
      Tensor kv = randn({B, S, 2, NH, hs}, dt).requires_grad_();
      Tensor dO = randn({B, T, NH, hs}, dt);
      SDPAOptions o;
      o.need_weights = true;
      AttentionResult a = scaled_dot_product_attention_kv_packed(q, kv, c.mask, o);
      std::vector<Tensor> ga = tg::grad({a.output}, {q, kv}, {dO});
      o.heads_last = true;
      auto part = [&](int64_t i) { return reshape(narrow(kv, 2, i, 1), {B, S, NH, hs}); };
      AttentionResult b = scaled_dot_product_attention(q, part(0), part(1), c.mask, o);
      std::vector<Tensor> gb = tg::grad({b.output}, {q, kv}, {dO});
      const std::string what = c.name + (dt == kFloat32 ? " float32" : " float64");
      const double tol = dt == kFloat32 ? 1e-6 : 1e-13;
      REQUIRE(a.output.shape() == Shape{B, T, NH, hs});
      tgt::require_close(a.output, b.output, tol, 0, what + ": output");
      tgt::require_close(a.weights, b.weights, tol, 0, what + ": weights");
      tgt::require_close(ga[0], gb[0], tol, 0, what + ": dq");
      tgt::require_close(ga[1], gb[1], tol, 0, what + ": d(kv)");
    }
  manual_seed(113);
  Tensor q = tgt::leaf({2, 4, 2, 3}), kv = tgt::leaf({2, 5, 2, 2, 3});
  Tensor pad5 =
      tensor(std::vector<bool>{false, true, false, false, true, false, false, false, false, false},
             {2, 5});
  tgt::check_grad(
      [&](const std::vector<Tensor>& in) {
        return scaled_dot_product_attention_kv_packed(
                   in[0], in[1], AttentionMask::key_padding(pad5, MaskPolarity::TrueBlocked))
            .output;
      },
      {q, kv}, "kv-packed sdpa key padding");
  REQUIRE_ERROR(scaled_dot_product_attention_kv_packed(zeros({2, 4, 2, 3}, kFloat64),
                                                       zeros({2, 5, 3, 2, 3}, kFloat64)),
                "scaled_dot_product_attention: q (2,4,2,3), kv (2,5,3,2,3): expected q (B, T, NH, "
                "hs) and kv (B, S, 2, NH, hs)");
  REQUIRE_ERROR(scaled_dot_product_attention_kv_packed(zeros({2, 4, 2, 3}, kFloat64),
                                                       zeros({2, 5, 2, 2, 4}, kFloat64)),
                "B and hs of q and kv differ");
}

TEST_CASE("SDPA gradcheck w.r.t. q, k, v for every mask kind", "[attention]") {
  manual_seed(103);
  for (const Case& c : mask_cases()) {
    Tensor q = tgt::leaf({2, 2, c.T, 3}), k = tgt::leaf({2, 2, c.S, 3}),
           v = tgt::leaf({2, 2, c.S, 2});
    AttentionMask m = c.mask;
    tgt::check_grad(
        [m](const std::vector<Tensor>& in) {
          return scaled_dot_product_attention(in[0], in[1], in[2], m).output;
        },
        {q, k, v}, "sdpa " + c.name);
  }
  // An explicit scale, and B = NH = 1.
  Tensor q = tgt::leaf({1, 1, 3, 2}), k = tgt::leaf({1, 1, 4, 2}), v = tgt::leaf({1, 1, 4, 3});
  SDPAOptions o;
  o.scale = 0.7;
  tgt::check_grad(
      [o](const std::vector<Tensor>& in) {
        return scaled_dot_product_attention(in[0], in[1], in[2], AttentionMask::causal(), o).output;
      },
      {q, k, v}, "sdpa scale 0.7");
  Tensor out = scaled_dot_product_attention(q, k, v, {}, o).output;
  tgt::require_close(out, reference(q, k, v, {}, 0.7).first, 1e-12, 0, "scale 0.7");
}

TEST_CASE("fully masked rows give output 0 and zero gradients, or the error", "[attention]") {
  manual_seed(104);
  Tensor pad = tensor(std::vector<bool>{false, false, false, true, true, true}, {1, 6});
  AttentionMask m =
      AttentionMask::local(1, 0) & AttentionMask::key_padding(pad, MaskPolarity::TrueBlocked);
  Tensor q = tgt::leaf({1, 1, 6, 3}), k = tgt::leaf({1, 1, 6, 3}), v = tgt::leaf({1, 1, 6, 2});
  for (bool weights : {false, true}) {
    SDPAOptions o;
    o.need_weights = weights;
    AttentionResult r = scaled_dot_product_attention(q, k, v, m, o);
    std::vector<double> out = r.output.to_vector<double>();
    for (int j = 8; j < 12; ++j) REQUIRE(out[j] == 0.0);  // rows 4, 5
    REQUIRE(out[0] != 0.0);
    std::vector<Tensor> g = tg::grad({r.output}, {q, k, v}, {ones({1, 1, 6, 2}, kFloat64)});
    for (const Tensor& t : g) REQUIRE(all_finite(t));
    std::vector<double> dq = g[0].to_vector<double>();
    for (int j = 12; j < 18; ++j) REQUIRE(dq[j] == 0.0);
    // Keys 3..5 are padding: they get no gradient at all.
    std::vector<double> dk = g[1].to_vector<double>(), dv = g[2].to_vector<double>();
    for (int j = 9; j < 18; ++j) REQUIRE(dk[j] == 0.0);
    for (int j = 6; j < 12; ++j) REQUIRE(dv[j] == 0.0);
    if (weights) {
      REQUIRE(all_finite(r.weights));
      std::vector<double> w = r.weights.to_vector<double>();
      for (int j = 24; j < 36; ++j) REQUIRE(w[j] == 0.0);
    }
  }
  AttentionMask strict = m;
  strict.error_on_fully_masked();
  REQUIRE_ERROR(scaled_dot_product_attention(q, k, v, strict),
                "scaled_dot_product_attention: row 4 of batch 0, head 0 has no allowed key (mask: "
                "local(1,0) & key_padding(B=1, S=6))");
  // A structurally empty tile (causal bottom-right, T > S) names its first row.
  Tensor q2 = randn({2, 1, 5, 3}, kFloat64), k2 = randn({2, 1, 3, 3}, kFloat64);
  AttentionMask br = AttentionMask::causal(CausalAlign::BottomRight);
  REQUIRE(scaled_dot_product_attention(q2, k2, k2, br).output.to_vector<double>()[0] == 0.0);
  br.error_on_fully_masked();
  REQUIRE_ERROR(scaled_dot_product_attention(q2, k2, k2, br),
                "row 0 of batch 0, head 0 has no allowed key (mask: causal(bottom-right))");
  // Batch and head are named: lengths (3, 0) leave batch 1 without keys.
  AttentionMask len = AttentionMask::key_lengths(tensor(std::vector<int64_t>{3, 0}));
  len.error_on_fully_masked();
  REQUIRE_ERROR(scaled_dot_product_attention(q2, k2, k2, len),
                "row 0 of batch 1, head 0 has no allowed key");
}

TEST_CASE("need_weights returns P - the probe sees S, P, dP and dS", "[attention]") {
  manual_seed(105);
  AttentionMask m =
      AttentionMask::local(1, 0) & AttentionMask::key_lengths(tensor(std::vector<int64_t>{4, 2}));
  Tensor q = tgt::leaf({2, 2, 5, 3}), k = tgt::leaf({2, 2, 5, 3}), v = tgt::leaf({2, 2, 5, 4});
  Tensor S, P, dP, dS;
  AttentionProbe probe;
  probe.on_forward = [&](const Tensor& s, const Tensor& p) { S = s, P = p; };
  probe.on_backward = [&](const Tensor& dp, const Tensor& ds) { dP = dp, dS = ds; };
  SDPAOptions o;
  o.need_weights = true;
  o.probe = &probe;
  AttentionResult r = scaled_dot_product_attention(q, k, v, m, o);
  auto [ref_out, ref_p] = reference(q, k, v, m);
  tgt::require_close(r.weights, ref_p, 1e-12, 0, "weights");
  tgt::require_close(P, ref_p, 1e-12, 0, "probe P");
  REQUIRE_FALSE(r.weights.requires_grad());
  // Rows sum to 1, or 0 for the fully masked rows (batch 1, rows 3 and 4 with lengths 2).
  std::vector<double> rs = sum(r.weights, {-1}).to_vector<double>();
  for (size_t i = 0; i < rs.size(); ++i) {
    const bool empty = i >= 10 && i % 5 >= 3;
    REQUIRE(rs[i] == Approx(empty ? 0.0 : 1.0).margin(1e-12));
  }
  // Scores: scale·qkᵀ where allowed, -inf elsewhere.
  Tensor allowed = m.dense_allowed(2, 2, 5, 5);
  Tensor s_ref =
      masked_fill(matmul(q, k.transpose(-2, -1)) / std::sqrt(3.0), logical_not(allowed), -kInf);
  Tensor blocked = logical_not(allowed);
  tgt::require_close(masked_fill(S, blocked, 0.0), masked_fill(s_ref, blocked, 0.0), 1e-12, 0,
                     "probe S");
  std::vector<double> sv = S.to_vector<double>();
  std::vector<bool> bv = blocked.to_vector<bool>();
  for (size_t i = 0; i < sv.size(); ++i) REQUIRE((sv[i] == -kInf) == bv[i]);
  REQUIRE(dP.defined() == false);
  Tensor dO = randn({2, 2, 5, 4}, kFloat64);
  r.output.backward(dO);
  // dP = dO·vᵀ where allowed, 0 elsewhere; dS = P ⊙ (dP − rowsum(dP ⊙ P)).
  Tensor dP_ref = masked_fill(matmul(dO, v.detach().transpose(-2, -1)), logical_not(allowed), 0.0);
  tgt::require_close(dP, dP_ref, 1e-12, 0, "probe dP");
  tgt::require_close(dS, P * (dP - sum(dP * P, {-1}, true)), 1e-12, 0, "probe dS");
}

TEST_CASE("SDPA dropout: seeded, p = 0 and eval are exact no-ops, gradcheck", "[attention]") {
  manual_seed(106);
  Tensor q = tgt::leaf({2, 1, 6, 3}), k = tgt::leaf({2, 1, 6, 3}), v = tgt::leaf({2, 1, 6, 2});
  SDPAOptions o;
  o.dropout_p = 0.4;
  o.need_weights = true;
  manual_seed(9);
  AttentionResult a = scaled_dot_product_attention(q, k, v, AttentionMask::causal(), o);
  manual_seed(9);
  AttentionResult b = scaled_dot_product_attention(q, k, v, AttentionMask::causal(), o);
  REQUIRE(a.output.to_vector<double>() == b.output.to_vector<double>());
  // The weights are P after dropout: 0 or P/(1-p), and they are what multiplies v.
  Tensor p = reference(q, k, v, AttentionMask::causal()).second;
  std::vector<double> w = a.weights.to_vector<double>(), pv = p.to_vector<double>();
  int64_t dropped = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    REQUIRE((w[i] == 0.0 || std::fabs(w[i] - pv[i] / 0.6) < 1e-12));
    dropped += pv[i] > 0 && w[i] == 0.0;
  }
  REQUIRE(dropped > 0);
  tgt::require_close(a.output, matmul(a.weights, v.detach()), 1e-12, 0, "output = weights·v");
  // p = 0 and eval mode are exactly no dropout.
  Tensor plain = scaled_dot_product_attention(q, k, v, AttentionMask::causal()).output;
  SDPAOptions zero;
  zero.dropout_p = 0.0;
  REQUIRE(scaled_dot_product_attention(q, k, v, AttentionMask::causal(), zero)
              .output.to_vector<double>() == plain.to_vector<double>());
  SDPAOptions eval = o;
  eval.training = false;
  REQUIRE(scaled_dot_product_attention(q, k, v, AttentionMask::causal(), eval)
              .output.to_vector<double>() == plain.to_vector<double>());
  for (const AttentionMask& m : {AttentionMask::causal(), AttentionMask::local(1, 1)}) {
    tgt::check_grad(
        [m](const std::vector<Tensor>& in) {
          manual_seed(77);  // every evaluation draws the same mask
          SDPAOptions d;
          d.dropout_p = 0.3;
          return scaled_dot_product_attention(in[0], in[1], in[2], m, d).output;
        },
        {q, k, v}, "sdpa dropout " + m.name());
  }
}

TEST_CASE("SDPA float32 agrees with float64", "[attention]") {
  manual_seed(107);
  for (const AttentionMask& m :
       {AttentionMask(), AttentionMask::causal(), AttentionMask::local(3, 1)}) {
    Tensor q = randn({2, 2, 70, 8}, kFloat64), k = randn({2, 2, 70, 8}, kFloat64),
           v = randn({2, 2, 70, 5}, kFloat64);
    Tensor dO = randn({2, 2, 70, 5}, kFloat64);
    Tensor q32 = q.to(kFloat32).requires_grad_(), k32 = k.to(kFloat32).requires_grad_(),
           v32 = v.to(kFloat32).requires_grad_();
    q.requires_grad_(), k.requires_grad_(), v.requires_grad_();
    Run r64 = run_sdpa(q, k, v, m, dO), r32 = run_sdpa(q32, k32, v32, m, dO.to(kFloat32));
    REQUIRE(r32.out.dtype() == kFloat32);
    REQUIRE(r32.dq.dtype() == kFloat32);
    tgt::require_close(r32.out, r64.out, 1e-5, 1e-4, "float32 out " + m.name());
    tgt::require_close(r32.dq, r64.dq, 1e-5, 1e-4, "float32 dq " + m.name());
    tgt::require_close(r32.dk, r64.dk, 1e-5, 1e-4, "float32 dk " + m.name());
    tgt::require_close(r32.dv, r64.dv, 1e-5, 1e-4, "float32 dv " + m.name());
  }
}

TEST_CASE("SDPA errors name every shape", "[attention]") {
  Tensor q = zeros({2, 2, 4, 3}, kFloat64), k = zeros({2, 2, 5, 3}, kFloat64),
         v = zeros({2, 2, 5, 6}, kFloat64);
  using A = AttentionMask;
  REQUIRE_ERROR(scaled_dot_product_attention(zeros({2, 4, 3}, kFloat64), k, v),
                "scaled_dot_product_attention: q (2,4,3), k (2,2,5,3), v (2,2,5,6): expected 4-D q "
                "(B, NH, T, hs)");
  REQUIRE_ERROR(scaled_dot_product_attention(q, zeros({2, 1, 5, 3}, kFloat64), v),
                "q (2,2,4,3), k (2,1,5,3), v (2,2,5,6): head counts of k (1) and v (2) differ");
  REQUIRE_ERROR(scaled_dot_product_attention(zeros({3, 2, 4, 3}, kFloat64), k, v),
                "q (3,2,4,3), k (2,2,5,3), v (2,2,5,6): batch dims B differ");
  REQUIRE_ERROR(
      scaled_dot_product_attention(q, zeros({2, 1, 5, 3}, kFloat64), zeros({2, 1, 5, 6}, kFloat64)),
      "q has 2 heads but k and v have 1; set enable_gqa for grouped-query attention");
  REQUIRE_ERROR(scaled_dot_product_attention(q, zeros({2, 2, 5, 4}, kFloat64), v),
                "head size hs of q (3) and k (4) differ");
  REQUIRE_ERROR(scaled_dot_product_attention(q, k, zeros({2, 2, 6, 6}, kFloat64)),
                "v (2,2,6,6): key length S of k (5) and v (6) differ");
  REQUIRE_ERROR(scaled_dot_product_attention(q, k.to(kFloat32), v),
                "scaled_dot_product_attention: q (2,2,4,3) is float64 but k (2,2,5,3) is float32");
  REQUIRE_ERROR(scaled_dot_product_attention(q, k, v.to(kInt64)),
                "v (2,2,5,6) has dtype int64, expected float32 or float64");
  REQUIRE_ERROR(scaled_dot_product_attention(
                    q, k, v, A::key_padding(zeros({2, 4}, kBool), MaskPolarity::TrueBlocked)),
                "scaled_dot_product_attention: key_padding_mask (2,4) must be (B, S) = (2, 5)");
  REQUIRE_ERROR(scaled_dot_product_attention(
                    q, k, v, A::from_bool(zeros({4, 4}, kBool), MaskPolarity::TrueBlocked)),
                "bool mask (4,4) does not broadcast to (B, NH, T, S) = (2,2,4,5)");
  SDPAOptions o;
  o.dropout_p = 1.0;
  REQUIRE_ERROR(scaled_dot_product_attention(q, k, v, {}, o), "dropout_p must be in [0, 1), got 1");
  o.dropout_p = 0;
  o.scale = kInf;
  REQUIRE_ERROR(scaled_dot_product_attention(q, k, v, {}, o), "scale must be finite, got inf");
  // Empty sizes are fine: S = 0 makes every row fully masked.
  Tensor out =
      scaled_dot_product_attention(q, zeros({2, 2, 0, 3}, kFloat64), zeros({2, 2, 0, 6}, kFloat64))
          .output;
  REQUIRE(out.shape() == Shape{2, 2, 4, 6});
  REQUIRE(sum(abs(out)).item<double>() == 0.0);
}

TEST_CASE("seed attention(Q, K, V, mask): 2-D to 4-D, mask == 0 blocked", "[attention]") {
  manual_seed(108);
  // 2-D with a 0/1 float tril mask (T, S).
  Tensor Q = tgt::leaf({4, 3}), K = tgt::leaf({5, 3}), V = tgt::leaf({5, 2});
  Tensor tril = tensor(
      std::vector<double>{1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0}, {4, 5});
  auto [out, w] = attention(Q, K, V, tril);
  REQUIRE(out.shape() == Shape{4, 2});
  REQUIRE(w.shape() == Shape{4, 5});
  Tensor s = masked_fill(matmul(Q, K.transpose(0, 1)) / std::sqrt(3.0),
                         eq(tril, zeros({}, kFloat64)), -kInf);
  Tensor p = softmax(s, -1);
  tgt::require_close(w, p, 1e-12, 0, "2-D weights");
  tgt::require_close(out, matmul(p, V), 1e-12, 0, "2-D output");
  REQUIRE(w.to_vector<double>()[0] == Approx(1.0));  // row 0 sees key 0 only
  tgt::check_grad(
      [tril](const std::vector<Tensor>& in) { return attention(in[0], in[1], in[2], tril).first; },
      {Q, K, V}, "attention 2-D");
  // 3-D (B, T, hs) with a (B, T, S) int mask, and a 1-D (S) mask.
  Tensor Q3 = tgt::leaf({2, 4, 3}), K3 = tgt::leaf({2, 5, 3}), V3 = tgt::leaf({2, 5, 2});
  Tensor m3 = bool_tensor({2, 4, 5}, 0.7, 8).to(kInt64);
  auto [o3, w3] = attention(Q3, K3, V3, m3);
  REQUIRE(o3.shape() == Shape{2, 4, 2});
  Tensor a3 =
      AttentionMask::from_seed(m3.unsqueeze(1)).dense_allowed(2, 1, 4, 5).reshape({2, 4, 5});
  Tensor p3 = softmax(
      masked_fill(matmul(Q3, K3.transpose(1, 2)) / std::sqrt(3.0), logical_not(a3), -kInf), -1);
  tgt::require_close(w3, p3, 1e-12, 0, "3-D weights");
  tgt::require_close(o3, matmul(p3, V3), 1e-12, 0, "3-D output");
  tgt::check_grad(
      [m3](const std::vector<Tensor>& in) { return attention(in[0], in[1], in[2], m3).first; },
      {Q3, K3, V3}, "attention 3-D");
  Tensor keys = tensor(std::vector<double>{1, 1, 0, 1, 0});
  tgt::require_close(attention(Q3, K3, V3, keys).second.sum({-1}), std::vector<double>(8, 1.0),
                     1e-12, 0);
  REQUIRE(attention(Q3, K3, V3, keys).second.to_vector<double>()[2] == 0.0);
  // 4-D without a mask equals SDPA.
  Tensor Q4 = tgt::leaf({2, 2, 3, 4}), K4 = tgt::leaf({2, 2, 3, 4}), V4 = tgt::leaf({2, 2, 3, 4});
  tgt::require_close(attention(Q4, K4, V4).first, reference(Q4, K4, V4, {}).first, 1e-12, 0, "4-D");
  REQUIRE_ERROR(attention(Q3, K, V),
                "attention: Q (2,4,3), K (5,3), V (5,2): expected Q (..., T, hs)");
  REQUIRE_ERROR(attention(Q3, K3, tgt::leaf({2, 4, 2})), "key length S of K (5) and V (4) differ");
  REQUIRE_ERROR(attention(Q3, K3, V3, ones({3, 4, 5}, kFloat64)),
                "attention: mask (3,4,5) does not broadcast to (..., T, S) = (2,4,5)");
  REQUIRE_ERROR(attention(tgt::leaf({3}), tgt::leaf({3}), tgt::leaf({3})), "the same 2 to 4 dims");
}

TEST_CASE("additive attention: values, masks, gradcheck, errors", "[attention]") {
  manual_seed(109);
  const int64_t B = 2, T = 3, S = 4, Cq = 3, Ck = 2, Cv = 2, H = 3;
  Tensor q = tgt::leaf({B, T, Cq}), k = tgt::leaf({B, S, Ck}), values = tgt::leaf({B, S, Cv});
  Tensor Wq = tgt::leaf({H, Cq}), Wk = tgt::leaf({H, Ck}), v = tgt::leaf({H});
  Tensor pad =
      tensor(std::vector<bool>{false, false, false, true, true, false, false, true}, {2, 4});
  AttentionMask m =
      AttentionMask::causal() & AttentionMask::key_padding(pad, MaskPolarity::TrueBlocked);
  auto [out, w] = additive_attention(q, k, values, Wq, Wk, v, m);
  REQUIRE(out.shape() == Shape{B, T, Cv});
  REQUIRE(w.shape() == Shape{B, T, S});
  // Hand loops: score(b, i, j) = Σ_h v_h tanh((W_q q_i)_h + (W_k k_j)_h) over allowed keys.
  auto qd = q.to_vector<double>(), kd = k.to_vector<double>(), vd = values.to_vector<double>();
  auto wq = Wq.to_vector<double>(), wk = Wk.to_vector<double>(), vv = v.to_vector<double>();
  std::vector<double> want_w, want_o;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T; ++i) {
      std::vector<double> e(S, 0.0);
      double z = 0;
      for (int64_t j = 0; j < S; ++j) {
        if (!m.allowed(b, 0, i, j, T, S)) continue;
        double sc = 0;
        for (int64_t h = 0; h < H; ++h) {
          double a = 0;
          for (int64_t c = 0; c < Cq; ++c) a += wq[h * Cq + c] * qd[(b * T + i) * Cq + c];
          for (int64_t c = 0; c < Ck; ++c) a += wk[h * Ck + c] * kd[(b * S + j) * Ck + c];
          sc += vv[h] * std::tanh(a);
        }
        e[j] = std::exp(sc);
        z += e[j];
      }
      for (int64_t j = 0; j < S; ++j) want_w.push_back(z > 0 ? e[j] / z : 0.0);
      for (int64_t c = 0; c < Cv; ++c) {
        double o = 0;
        for (int64_t j = 0; j < S; ++j) o += (z > 0 ? e[j] / z : 0.0) * vd[(b * S + j) * Cv + c];
        want_o.push_back(o);
      }
    }
  tgt::require_close(w, want_w, 1e-12, 1e-12, "additive weights");
  tgt::require_close(out, want_o, 1e-12, 1e-12, "additive output");
  REQUIRE(w.to_vector<double>()[12] == 0.0);  // batch 1, row 0: key 0 is padding -> fully masked
  for (const AttentionMask& mm : {m, AttentionMask(), AttentionMask::local(1, 0)}) {
    tgt::check_grad(
        [mm](const std::vector<Tensor>& in) {
          return additive_attention(in[0], in[1], in[2], in[3], in[4], in[5], mm).first;
        },
        {q, k, values, Wq, Wk, v}, "additive_attention " + mm.name());
  }
  AttentionMask strict = m;
  strict.error_on_fully_masked();
  REQUIRE_ERROR(additive_attention(q, k, values, Wq, Wk, v, strict),
                "additive_attention: row 0 of batch 1 has no allowed key");
  REQUIRE_ERROR(
      additive_attention(q, k, values, Wk, Wk, v),
      "additive_attention: q (2,3,3), k (2,4,2), values (2,4,2), W_q (3,2), W_k (3,2), v (3): "
      "expected q (B, T, Cq)");
  REQUIRE_ERROR(
      additive_attention(q, k, values, Wq, Wk, v,
                         AttentionMask::key_lengths(tensor(std::vector<int64_t>{1, 2, 3}))),
      "additive_attention: key lengths (3) must be (B) = (2)");
}

TEST_CASE("a long local window runs in O(T·W): T = 4096, local(8, 0), float32", "[attention]") {
  manual_seed(110);
  const int64_t T = 4096;
  Tensor q = randn({1, 1, T, 16}).requires_grad_(), k = randn({1, 1, T, 16}).requires_grad_(),
         v = randn({1, 1, T, 16}).requires_grad_();
  const auto t0 = std::chrono::steady_clock::now();
  Tensor out = scaled_dot_product_attention(q, k, v, AttentionMask::local(8, 0)).output;
  out.sum().backward();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(out.shape() == Shape{1, 1, T, 16});
  REQUIRE(q.grad().shape() == Shape{1, 1, T, 16});
  REQUIRE(all_finite(k.grad()));
  REQUIRE(secs < 1.0);
}

TEST_CASE("SDPA is_causal equals the causal mask part and refuses a bottom-right mask",
          "[attention]") {
  manual_seed(21);
  Tensor q = randn({2, 2, 9, 8}), k = randn({2, 2, 9, 8}), v = randn({2, 2, 9, 8});
  SDPAOptions o;
  o.is_causal = true;
  const Tensor a = scaled_dot_product_attention(q, k, v, {}, o).output;
  const Tensor b = scaled_dot_product_attention(q, k, v, AttentionMask::causal()).output;
  CHECK(a.to_vector<float>() == b.to_vector<float>());
  // with a local window: the intersection
  const Tensor c = scaled_dot_product_attention(q, k, v, AttentionMask::local(2, 2), o).output;
  const Tensor d =
      scaled_dot_product_attention(q, k, v, AttentionMask::local(2, 2) & AttentionMask::causal())
          .output;
  CHECK(c.to_vector<float>() == d.to_vector<float>());
  REQUIRE_ERROR(
      scaled_dot_product_attention(q, k, v, AttentionMask::causal(CausalAlign::BottomRight), o),
      "causal alignments differ");
  // randint(high, shape): low 0, as PyTorch
  manual_seed(3);
  const Tensor r1 = randint(7, {50});
  manual_seed(3);
  CHECK(r1.to_vector<int64_t>() == randint(0, 7, {50}).to_vector<int64_t>());
}

// Grouped- and multi-query attention (enable_gqa): k and v with NKV heads equal the call with
// them repeated (repeat_interleave, PyTorch's order), values and gradients, for every mask kind,
// both layouts, the kv-packed form, float32 on both product strategies, several tiles and long
// key rows, and at 1 and 2 threads bit for bit.
namespace {
Run run_gqa(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMask& m,
            const Tensor& dO, bool heads_last = false) {
  SDPAOptions o;
  o.enable_gqa = true;
  o.heads_last = heads_last;
  auto hl = [&](const Tensor& x) { return heads_last ? x.transpose(1, 2) : x; };
  Tensor out = hl(scaled_dot_product_attention(hl(q), hl(k), hl(v), m, o).output);
  std::vector<Tensor> g = tg::grad({out}, {q, k, v}, {dO});
  return {out, g[0], g[1], g[2]};
}
Run run_repeated(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMask& m,
                 const Tensor& dO) {
  const int64_t g = q.size(1) / k.size(1);
  Tensor out =
      scaled_dot_product_attention(q, repeat_interleave(k, g, 1), repeat_interleave(v, g, 1), m)
          .output;
  std::vector<Tensor> gr = tg::grad({out}, {q, k, v}, {dO});
  return {out, gr[0], gr[1], gr[2]};
}
}  // namespace

TEST_CASE("grouped-query SDPA equals SDPA with k and v repeated, every mask kind",
          "[attention][gqa]") {
  manual_seed(120);
  std::vector<Case> cases = mask_cases();
  cases.push_back({"causal, several tiles", AttentionMask::causal(), 150, 150});
  cases.push_back({"none, long key rows", AttentionMask(), 70, 300});
  {  // one tile over 300 keys with padding: the group's shared K and V panels (and their tail)
    std::vector<bool> pad(600, false);
    for (int64_t j : {3, 299, 300 + 64, 300 + 290}) pad[static_cast<size_t>(j)] = true;
    cases.push_back({"key padding, long key rows",
                     AttentionMask::key_padding(tensor(pad, {2, 300}), MaskPolarity::TrueBlocked),
                     70, 300});
  }
  cases.push_back({"local(4,0) bottom-right, several tiles",
                   AttentionMask::local(4, 0, CausalAlign::BottomRight), 100, 170});
  for (DType dt : {kFloat64, kFloat32})
    for (const Case& c : cases)
      for (bool hl : {false, true}) {
        // mask tensors are made for (B, NH) = (2, 2): multi-query there, groups of 2 elsewhere
        const int64_t NH = c.mask.has_data() ? 2 : 4, NKV = c.mask.has_data() ? 1 : 2;
        Tensor q = randn({2, NH, c.T, 5}, dt).requires_grad_(),
               k = randn({2, NKV, c.S, 5}, dt).requires_grad_(),
               v = randn({2, NKV, c.S, 3}, dt).requires_grad_();
        Tensor dO = randn({2, NH, c.T, 3}, dt);
        const std::string what =
            c.name + (dt == kFloat32 ? " float32" : " float64") + (hl ? " heads last" : "");
        const Run a = run_gqa(q, k, v, c.mask, dO, hl), b = run_repeated(q, k, v, c.mask, dO);
        require_runs_close(a, b, dt == kFloat32 ? 2e-6 : 1e-13, what);
        REQUIRE(a.dk.shape() == k.shape());
      }
}

TEST_CASE("grouped-query SDPA: kv-packed, both float32 product strategies, threads, gradcheck",
          "[attention][gqa]") {
  struct Restore {
    ~Restore() {
      cpu::reset_simd_kernels();
      set_num_threads(1);
    }
  } restore;
  manual_seed(121);
  using A = AttentionMask;
  for (const Case& c : {Case{"causal", A::causal(), 70, 70}, Case{"none", A(), 40, 300},
                        Case{"local(3,0)", A::local(3, 0), 130, 130}}) {
    const int64_t B = 2, NH = 6, NKV = 2, hs = 8;
    Tensor q = randn({B, c.T, NH, hs}, kFloat32).requires_grad_();
    Tensor kv = randn({B, c.S, 2, NKV, hs}, kFloat32).requires_grad_();
    Tensor dO = randn({B, c.T, NH, hs}, kFloat32);
    SDPAOptions o;
    o.enable_gqa = true;
    std::vector<std::vector<Tensor>> runs;
    for (bool simd : {true, false})
      for (int threads : {1, 2}) {
        cpu::set_simd_kernels(simd);
        set_num_threads(threads);
        Tensor out = scaled_dot_product_attention_kv_packed(q, kv, c.mask, o).output;
        std::vector<Tensor> g = tg::grad({out}, {q, kv}, {dO});
        runs.push_back({out, g[0], g[1]});
      }
    // the repeated reference, heads last
    auto part = [&](int64_t i) {
      return repeat_interleave(reshape(narrow(kv, 2, i, 1), {B, c.S, NKV, hs}), NH / NKV, 2);
    };
    o.heads_last = true;
    o.enable_gqa = false;
    Tensor ref = scaled_dot_product_attention(q, part(0), part(1), c.mask, o).output;
    std::vector<Tensor> gr = tg::grad({ref}, {q, kv}, {dO});
    for (size_t r = 0; r < runs.size(); ++r) {
      const std::string what = c.name + " run " + std::to_string(r);
      tgt::require_close(runs[r][0], ref, 2e-6, 0, what + ": output");
      tgt::require_close(runs[r][1], gr[0], 2e-6, 0, what + ": dq");
      tgt::require_close(runs[r][2], gr[1], 2e-6, 0, what + ": d(kv)");
    }
    for (size_t r : {1, 3})  // 2 threads = 1 thread, bit for bit
      for (int i = 0; i < 3; ++i)
        REQUIRE(runs[r][i].to_vector<double>() == runs[r - 1][i].to_vector<double>());
  }
  // float64 gradcheck: multi-query with padding, grouped with a window
  Tensor q = tgt::leaf({2, 4, 4, 3}), k = tgt::leaf({2, 1, 5, 3}), v = tgt::leaf({2, 1, 5, 2});
  Tensor pad =
      tensor(std::vector<bool>{false, true, false, false, true, false, false, false, false, false},
             {2, 5});
  for (const A& m : {A::key_padding(pad, MaskPolarity::TrueBlocked), A::local(1, 1)}) {
    SDPAOptions g;
    g.enable_gqa = true;
    tgt::check_grad(
        [m, g](const std::vector<Tensor>& in) {
          return scaled_dot_product_attention(in[0], in[1], in[2], m, g).output;
        },
        {q, k, v}, "gqa sdpa " + m.name());
  }
  Tensor k2 = tgt::leaf({2, 2, 5, 3}), v2 = tgt::leaf({2, 2, 5, 2});
  SDPAOptions g;
  g.enable_gqa = true;
  tgt::check_grad(
      [g](const std::vector<Tensor>& in) {
        return scaled_dot_product_attention(in[0], in[1], in[2], A::causal(), g).output;
      },
      {q, k2, v2}, "gqa sdpa causal, groups of 2");
  // errors
  SDPAOptions e;
  e.enable_gqa = true;
  REQUIRE_ERROR(scaled_dot_product_attention(q, zeros({2, 3, 5, 3}, kFloat64),
                                             zeros({2, 3, 5, 2}, kFloat64), {}, e),
                "enable_gqa needs the 4 query heads to be a multiple of the 3 key/value heads");
  REQUIRE_ERROR(scaled_dot_product_attention_packed(zeros({2, 4, 3, 2, 3}, kFloat64), {}, e),
                "packed qkv has one head count");
}
