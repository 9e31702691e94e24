// tests/ops/test_attention_bf16.cpp — the fused attention's bfloat16 products (AVX512-BF16 dot
// products, ops/attention/cpu/gemm_bf16_avx512.cpp): the kernel against a raw loop on
// bfloat16-rounded operands; the bfloat16 SDPA on the dot path, forward and backward, every mask
// kind, grouped-query and packed forms, several tiles and odd widths and head sizes, against
// (a) the float32 products on the same bfloat16 inputs and (b) a float64 reference that rounds P
// and dS to bfloat16 as the dot path does; special values; TG_ATTENTION_BF16's dispatch. The
// tolerances are derived from the data (see Bounds). Skipped, with a warning, where the CPU or
// build has no AVX512-BF16 (the dispatch is tested everywhere).
#include "helpers.hpp"

#include "autograd/convert.hpp"
#include "autograd/half.hpp"
#include "ops/attention/attention.hpp"
#include "ops/attention/cpu/bf16.hpp"
#include "ops/core/cpu/kernels.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace tg;

namespace {
constexpr double kU = 1.0 / 256;         // bfloat16 unit roundoff, 2^-8 (8 significant bits)
constexpr double kF32 = 1.0 / 16777216;  // float32 unit roundoff, 2^-24
double bf(double x) { return bf16_to_float(float_to_bf16(static_cast<float>(x))); }

struct Mode {  // forces a path, restores the default after
  explicit Mode(cpu::AttentionBf16 m) { cpu::set_attention_bf16(m); }
  ~Mode() { cpu::reset_attention_bf16(); }
};

bool have_dot() {
  if (cpu::attention_bf16_dot_available()) return true;
  WARN("no AVX512-BF16 on this CPU or build: the dot products are not used here");
  return false;
}
}  // namespace

TEST_CASE("attention bf16: the kernel matches a raw loop on bfloat16-rounded operands",
          "[cpu][attention]") {
  if (!have_dot()) return;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  for (int t = 0; t < 400; ++t) {
    const int64_t M = 1 + rng() % 70, N = 1 + rng() % 150, K = rng() % 90;
    const bool down = rng() % 2, acc = rng() % 2, masked = rng() % 3 == 0;
    const int64_t lda = (down ? M : K) + rng() % 3, ldb = N + rng() % 4, ldc = N + rng() % 3;
    std::vector<float> A((down ? K : M) * lda + 1), B(K * ldb + 1), C(M * ldc), keys(N, 0.f);
    for (float& x : A) x = u(rng);
    for (float& x : B) x = u(rng);
    for (float& x : C) x = u(rng);
    if (masked)
      for (int64_t n = 0; n < N; ++n)
        if (rng() % 3 == 0) {
          keys[n] = -inf;
          for (int64_t k = 0; k < K; ++k) B[k * ldb + n] = rng() % 2 ? nan : inf;
        }
    const std::vector<float> C0 = C;
    const float alpha = 0.5f + u(rng);
    auto a = [&](int64_t m, int64_t k) { return down ? A[k * lda + m] : A[m * lda + k]; };
    const int64_t K2 = (K + 1) / 2;
    std::vector<float> bpack(64 * K2 + 1), apack((M + 5) / 6 * 6 * K2 + 1);
    cpu::attention_gemm_bf16(M, N, K, alpha, A.data(), down ? 1 : lda, down ? lda : 1, B.data(),
                             ldb, acc, C.data(), ldc, bpack.data(), apack.data(),
                             masked ? keys.data() : nullptr);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        INFO("M " << M << " N " << N << " K " << K << " down " << down << " at " << m << "," << n);
        if (masked && keys[n] != 0.f) {
          REQUIRE(C[m * ldc + n] == -inf);
          continue;
        }
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double p = bf(a(m, k)) * bf(B[k * ldb + n]);
          ref += p, mag += std::fabs(p);
        }
        ref *= alpha, mag *= std::fabs(alpha);
        const double c0 = acc ? C0[m * ldc + n] : 0.0;
        // float32 accumulation of K products (pairs), the scaling and the addition
        REQUIRE(std::fabs(C[m * ldc + n] - (ref + c0)) <=
                (K + 4) * kF32 * (mag + std::fabs(c0)) + 1e-30);
      }
    for (int64_t m = 0; m < M; ++m)  // the gaps between rows untouched
      for (int64_t n = N; n < ldc && m * ldc + n < static_cast<int64_t>(C.size()); ++n)
        REQUIRE(C[m * ldc + n] == C0[m * ldc + n]);
  }
}

TEST_CASE("attention bf16: TG_ATTENTION_BF16's choices and errors") {
  struct Unset {
    ~Unset() { unsetenv("TG_ATTENTION_BF16"); }
  } unset;
  setenv("TG_ATTENTION_BF16", "fast", 1);
  REQUIRE_THROWS_WITH(cpu::attention_bf16_dot(), Catch::Contains("TG_ATTENTION_BF16=fast") &&
                                                     Catch::Contains("expected dot or float32"));
  setenv("TG_ATTENTION_BF16", "float32", 1);
  REQUIRE_FALSE(cpu::attention_bf16_dot());
  setenv("TG_ATTENTION_BF16", "dot", 1);
  if (convert::path_supported(convert::Path::Avx512Bf16))
    REQUIRE(cpu::attention_bf16_dot() == cpu::attention_bf16_dot_available());
  else
    REQUIRE_THROWS_WITH(cpu::attention_bf16_dot(), Catch::Contains("TG_ATTENTION_BF16=dot"));
  {
    Mode f(cpu::AttentionBf16::Float32);  // the setter wins over the environment
    REQUIRE_FALSE(cpu::attention_bf16_dot());
  }
  unsetenv("TG_ATTENTION_BF16");
  {
    Mode f(cpu::AttentionBf16::Float32);
    REQUIRE_FALSE(cpu::attention_bf16_dot());
  }
  if (cpu::attention_bf16_dot_available()) {
    REQUIRE(cpu::attention_bf16_dot());  // the default where the CPU has it, from 64 keys on
    REQUIRE(cpu::attention_bf16_dot(cpu::kAttentionBf16MinKeys));
    REQUIRE_FALSE(cpu::attention_bf16_dot(cpu::kAttentionBf16MinKeys - 1));
    Mode d(cpu::AttentionBf16::Dot);
    REQUIRE(cpu::attention_bf16_dot());
    REQUIRE(cpu::attention_bf16_dot(1));  // forced: at any width
    // without the AVX-512 attention kernels the products run in float32 (OpenBLAS)
    REQUIRE(cpu::set_kernel_variant(cpu::KernelFamily::Attention, false));
    REQUIRE_FALSE(cpu::attention_bf16_dot());
    cpu::reset_simd_kernels();
  } else if (!convert::path_supported(convert::Path::Avx512Bf16)) {
    REQUIRE_THROWS_WITH(cpu::set_attention_bf16(cpu::AttentionBf16::Dot),
                        Catch::Contains("TG_ATTENTION_BF16=dot") && Catch::Contains("AVX512-BF16"));
  }
}

namespace {
// One case: the operands' form and sizes, the mask.
struct Case {
  const char* name;
  AttentionMask mask;
  int64_t B, NH, NKV, T, S, hs, hsv;
  bool packed = false;  // qkv (B, T, 3, NH, hs)
};

// The operands as bfloat16 leaves, the node's output and, after backward(g), the gradients; each
// in the canonical (B, heads, T|S, hs) layout as float64 for the reference.
struct Run {
  std::vector<double> o, dq, dk, dv;
};
std::vector<double> canon(const Tensor& t) {
  return t.to(kFloat64).contiguous().to_vector<double>();
}
std::vector<Tensor> split(const Case& c, const Tensor& x) {  // packed: q, k, v views
  if (!c.packed) return {};
  return {x.select(2, 0).permute({0, 2, 1, 3}), x.select(2, 1).permute({0, 2, 1, 3}),
          x.select(2, 2).permute({0, 2, 1, 3})};
}
std::vector<Tensor> inputs(const Case& c) {
  manual_seed(21);
  if (c.packed) return {randn({c.B, c.T, 3, c.NH, c.hs}).to(kBFloat16)};
  return {randn({c.B, c.NH, c.T, c.hs}).to(kBFloat16), randn({c.B, c.NKV, c.S, c.hs}).to(kBFloat16),
          randn({c.B, c.NKV, c.S, c.hsv}).to(kBFloat16)};
}
Run run(const Case& c, const std::vector<Tensor>& in, const Tensor& g, bool dot) {
  Mode m(dot ? cpu::AttentionBf16::Dot : cpu::AttentionBf16::Float32);
  std::vector<Tensor> x;
  for (const Tensor& t : in) x.push_back(t.clone().requires_grad_());
  SDPAOptions opts;
  opts.enable_gqa = c.NKV != c.NH;
  Tensor y = c.packed ? scaled_dot_product_attention_packed(x[0], c.mask).output
                      : scaled_dot_product_attention(x[0], x[1], x[2], c.mask, opts).output;
  REQUIRE(y.dtype() == kBFloat16);
  y.backward(g);
  Run r;
  if (c.packed) {
    r.o = canon(y.permute({0, 2, 1, 3}));
    const std::vector<Tensor> d = split(c, x[0].grad());
    r.dq = canon(d[0]), r.dk = canon(d[1]), r.dv = canon(d[2]);
  } else {
    r.o = canon(y), r.dq = canon(x[0].grad()), r.dk = canon(x[1].grad()), r.dv = canon(x[2].grad());
  }
  return r;
}

// The float64 reference that rounds P and dS to bfloat16 as the dot path does, and per element
// the two error bounds: `a` for the dot path against the float32 products on the same inputs,
// `b` against this reference. Derivation: the dot path's operands are bfloat16 values (exact)
// except P and dS, each rounded once (relative error ≤ u = 2^-8); every product accumulates in
// float32 (≤ γ = 2(n + 4)·2^-24 of the sum of |terms|, n the longest sum); P itself comes from
// float32 scores, so a row's P carries a relative error ≤ η = γ + 2γ·max_j(scale·Σ|q||k| + |bias|)
// on either path, dS ≤ 3η·D with D = P·(Σ|dO||V| + Σ_j' P Σ|dO||V|) its terms' magnitude. Against
// the float32 path, P's rounding adds u·P (dS: u·|dS|); against the reference, the rounding of a
// value known to ±t can differ only where a bfloat16 rounding boundary lies within t: the bound
// uses |bf(x ± t) − bf(x)| there. The outputs and gradients themselves are rounded to bfloat16
// once (u of each side).
struct Ref {
  Run r, a, b;  // values, bounds (a), bounds (b)
};
double flip(double x, double t) {
  return std::max(std::fabs(bf(x + t) - bf(x)), std::fabs(bf(x - t) - bf(x))) + t;
}
Ref reference(const Case& c, const std::vector<Tensor>& in, const Tensor& g) {
  std::vector<double> q, k, v, dO;
  if (c.packed) {
    const std::vector<Tensor> x = split(c, in[0]);
    q = canon(x[0]), k = canon(x[1]), v = canon(x[2]), dO = canon(g.permute({0, 2, 1, 3}));
  } else {
    q = canon(in[0]), k = canon(in[1]), v = canon(in[2]), dO = canon(g);
  }
  const int64_t B = c.B, NH = c.NH, T = c.T, S = c.S, hs = c.hs, hsv = c.hsv, grp = NH / c.NKV;
  const double scale = 1.0 / std::sqrt(double(hs));
  const double gam = 2.0 * (std::max({S, T, hs, hsv}) + 4) * kF32;
  const Tensor bias_t = c.mask.dense_bias(NH, T, S);
  const std::vector<double> bias = bias_t.defined() ? canon(bias_t) : std::vector<double>();
  Ref R;
  for (Run* x : {&R.r, &R.a, &R.b}) {
    x->o.assign(B * NH * T * hsv, 0), x->dq.assign(B * NH * T * hs, 0);
    x->dk.assign(B * c.NKV * S * hs, 0), x->dv.assign(B * c.NKV * S * hsv, 0);
  }
  std::vector<double> P(S), dP(S), dS(S), D(S), eA(S), eB(S), mv(S);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < NH; ++h) {
      const int64_t kh = b * c.NKV + h / grp;
      const double* Q = &q[(b * NH + h) * T * hs];
      const double* K = &k[kh * S * hs];
      const double* V = &v[kh * S * hsv];
      const double* G = &dO[(b * NH + h) * T * hsv];
      for (int64_t i = 0; i < T; ++i) {
        double mx = -INFINITY, sig = 0;
        for (int64_t j = 0; j < S; ++j) {
          double s = 0, mag = 0;
          for (int64_t e = 0; e < hs; ++e)
            s += Q[i * hs + e] * K[j * hs + e], mag += std::fabs(Q[i * hs + e] * K[j * hs + e]);
          const double add = c.mask.additive_at(b, h, i, j, T, S) +
                             (bias.empty() ? 0.0 : bias[(h * T + i) * S + j]);
          const bool ok = c.mask.allowed(b, h, i, j, T, S);
          P[j] = ok ? scale * s + add : -INFINITY;
          if (ok) mx = std::max(mx, P[j]), sig = std::max(sig, scale * mag + std::fabs(add));
        }
        const double eta = gam + 2 * gam * sig;
        double z = 0;
        for (int64_t j = 0; j < S; ++j) z += P[j] = mx == -INFINITY ? 0.0 : std::exp(P[j] - mx);
        for (int64_t j = 0; j < S; ++j) P[j] = z > 0 ? P[j] / z : 0.0;
        double rs = 0, rmag = 0;
        for (int64_t j = 0; j < S; ++j) {
          double s = 0, mag = 0;
          for (int64_t e = 0; e < hsv; ++e)
            s += G[i * hsv + e] * V[j * hsv + e], mag += std::fabs(G[i * hsv + e] * V[j * hsv + e]);
          dP[j] = s, mv[j] = mag, rs += P[j] * s, rmag += P[j] * mag;
        }
        for (int64_t j = 0; j < S; ++j) {
          dS[j] = P[j] * (dP[j] - rs), D[j] = P[j] * (mv[j] + rmag);
          eA[j] = kU * std::fabs(dS[j]) + 3 * eta * D[j], eB[j] = flip(dS[j], 3 * eta * D[j]);
        }
        for (int64_t j = 0; j < S; ++j) {
          if (P[j] == 0) continue;
          const double pb = bf(P[j]), pa = (kU + eta) * P[j], pB = flip(P[j], eta * P[j]);
          for (int64_t e = 0; e < hsv; ++e) {
            const int64_t oi = ((b * NH + h) * T + i) * hsv + e, vi = (kh * S + j) * hsv + e;
            const double acc = gam * P[j] * std::fabs(V[j * hsv + e]);
            R.r.o[oi] += pb * V[j * hsv + e];
            R.a.o[oi] += pa * std::fabs(V[j * hsv + e]) + acc;
            R.b.o[oi] += pB * std::fabs(V[j * hsv + e]) + acc;
            const double accv = gam * P[j] * std::fabs(G[i * hsv + e]);
            R.r.dv[vi] += pb * G[i * hsv + e];
            R.a.dv[vi] += pa * std::fabs(G[i * hsv + e]) + accv;
            R.b.dv[vi] += pB * std::fabs(G[i * hsv + e]) + accv;
          }
        }
        for (int64_t j = 0; j < S; ++j) {
          if (dS[j] == 0 && D[j] == 0) continue;
          const double sb = scale * bf(dS[j]), m = scale * (std::fabs(dS[j]) + 3 * eta * D[j]);
          for (int64_t e = 0; e < hs; ++e) {
            const int64_t qi = ((b * NH + h) * T + i) * hs + e, ki = (kh * S + j) * hs + e;
            const double kq = std::fabs(K[j * hs + e]), qq = std::fabs(Q[i * hs + e]);
            R.r.dq[qi] += sb * K[j * hs + e];
            R.a.dq[qi] += scale * eA[j] * kq + gam * m * kq;
            R.b.dq[qi] += scale * eB[j] * kq + gam * m * kq;
            R.r.dk[ki] += sb * Q[i * hs + e];
            R.a.dk[ki] += scale * eA[j] * qq + gam * m * qq;
            R.b.dk[ki] += scale * eB[j] * qq + gam * m * qq;
          }
        }
      }
    }
  return R;
}

// Every element of x within its bound of y (the two bfloat16 roundings added: `both`).
void within(const char* what, const std::vector<double>& x, const std::vector<double>& y,
            const std::vector<double>& bound, bool both) {
  REQUIRE(x.size() == y.size());
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (size_t e = 0; e < x.size(); ++e) {
    const double r = 1.01 * kU * (std::fabs(x[e]) + (both ? std::fabs(y[e]) : 0.0));
    const double err = std::fabs(x[e] - y[e]), lim = bound[e] + r + 1e-30;
    worst = std::max(worst, err / lim);
    if (!(err <= lim)) bad += 1, first = first < 0 ? static_cast<int64_t>(e) : first;
  }
  INFO(what << ": " << bad << " of " << x.size() << " outside; worst error/bound " << worst
            << (first >= 0 ? fmt::format(" first at {}: {} vs {} (bound {})", first, x[first],
                                         y[first], bound[first])
                           : std::string()));
  REQUIRE(bad == 0);
}

void check_case(const Case& c) {
  INFO(c.name << " B " << c.B << " NH " << c.NH << " NKV " << c.NKV << " T " << c.T << " S " << c.S
              << " hs " << c.hs << " hsv " << c.hsv);
  const std::vector<Tensor> in = inputs(c);
  manual_seed(22);
  const Tensor g = c.packed ? randn({c.B, c.T, c.NH, c.hs}).to(kBFloat16)
                            : randn({c.B, c.NH, c.T, c.hsv}).to(kBFloat16);
  const Run dot = run(c, in, g, true), f32 = run(c, in, g, false);
  const Ref R = reference(c, in, g);
  within("output (a)", dot.o, f32.o, R.a.o, true);
  within("dq (a)", dot.dq, f32.dq, R.a.dq, true);
  within("dk (a)", dot.dk, f32.dk, R.a.dk, true);
  within("dv (a)", dot.dv, f32.dv, R.a.dv, true);
  within("output (b)", dot.o, R.r.o, R.b.o, false);
  within("dq (b)", dot.dq, R.r.dq, R.b.dq, false);
  within("dk (b)", dot.dk, R.r.dk, R.b.dk, false);
  within("dv (b)", dot.dv, R.r.dv, R.b.dv, false);
}
}  // namespace

TEST_CASE("attention bf16: the dot path against the float32 products and a float64 reference") {
  if (!have_dot()) return;
  manual_seed(31);
  const Tensor pad = rand({2, 300}) < 0.2;              // True = blocked
  const Tensor allowed = rand({2, 1, 300, 300}) < 0.7;  // True = allowed
  Tensor add = randn({1, 2, 300, 300});
  add = where(rand({1, 2, 300, 300}) < 0.1, full({1, 2, 300, 300}, -INFINITY), add);
  const Tensor lengths = tensor(std::vector<int64_t>{300, 201}, {2});
  const Tensor table = randn({2, 32});
  const std::vector<std::pair<const char*, AttentionMask>> masks = {
      {"none", AttentionMask()},
      {"causal", AttentionMask::causal()},
      {"local(128,0)", AttentionMask::local(128, 0)},
      {"local(7,5)", AttentionMask::local(7, 5)},
      {"blocked(48)", AttentionMask::blocked(48)},
      {"causal & padding",
       AttentionMask::causal() & AttentionMask::key_padding(pad, MaskPolarity::TrueBlocked)},
      {"lengths", AttentionMask::key_lengths(lengths)},
      {"bool", AttentionMask::from_bool(allowed, MaskPolarity::TrueAllowed)},
      {"additive", AttentionMask::additive(add)},
      {"alibi & causal",
       AttentionMask::alibi(AttentionMask::alibi_slopes(2)) & AttentionMask::causal()},
      {"relative bias", AttentionMask::relative_bias(table)},
  };
  for (const auto& [name, mask] : masks) check_case({name, mask, 2, 2, 2, 300, 300, 64, 64});
}

TEST_CASE("attention bf16: tails, odd head sizes, grouped-query and packed forms") {
  if (!have_dot()) return;
  check_case({"causal hs 24", AttentionMask::causal(), 1, 2, 2, 77, 77, 24, 24});
  check_case({"none hs 40 hsv 24, T != S", AttentionMask(), 1, 2, 2, 45, 131, 40, 24});
  check_case({"local(5,3) hs 40", AttentionMask::local(5, 3), 2, 3, 3, 93, 93, 40, 40});
  check_case({"gqa causal", AttentionMask::causal(), 1, 4, 2, 150, 150, 32, 32});
  check_case({"gqa local(16,0)", AttentionMask::local(16, 0), 2, 6, 3, 70, 70, 24, 24});
  Case p{"packed causal", AttentionMask::causal(), 2, 2, 2, 65, 65, 24, 24};
  p.packed = true;
  check_case(p);
  check_case({"single key", AttentionMask(), 1, 1, 1, 5, 1, 16, 16});
  check_case({"odd hs 13 hsv 7", AttentionMask::local(40, 9), 1, 2, 2, 150, 150, 13, 7});
}

namespace {
// Output and q, k, v gradients of a bfloat16 SDPA on the chosen path, as float64.
Run plain(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMask& m, bool dot) {
  const Case c{"special", m,         q.size(0), q.size(1), k.size(1),
               q.size(2), k.size(2), q.size(3), v.size(3)};
  manual_seed(23);
  return run(c, {q, k, v}, randn({c.B, c.NH, c.T, c.hsv}).to(kBFloat16), dot);
}
}  // namespace

TEST_CASE("attention bf16: special values on the dot path") {
  if (!have_dot()) return;
  manual_seed(41);
  const int64_t T = 70, hs = 24;
  Tensor q = randn({2, 2, T, hs}).to(kBFloat16), k = randn({2, 2, T, hs}).to(kBFloat16),
         v = randn({2, 2, T, hs}).to(kBFloat16);
  SECTION("a fully masked row gives 0 and zero gradients") {
    std::vector<bool> blocked(2 * T, false);
    for (int64_t j = 0; j < T; ++j) blocked[T + j] = true;  // batch 1: every key blocked
    const AttentionMask m =
        AttentionMask::causal() &
        AttentionMask::key_padding(tensor(blocked, {2, T}), MaskPolarity::TrueBlocked);
    const Run r = plain(q, k, v, m, true);
    const int64_t half_o = 2 * T * hs;  // batch 1's elements come second
    for (size_t e = half_o; e < r.o.size(); ++e) REQUIRE(r.o[e] == 0);
    for (const auto* g : {&r.dq, &r.dk, &r.dv})
      for (size_t e = g->size() / 2; e < g->size(); ++e) REQUIRE((*g)[e] == 0);
    for (size_t e = 0; e < half_o; ++e) REQUIRE(std::isfinite(r.o[e]));
  }
  SECTION("NaN and inf in the keys of blocked positions leave no trace in the output") {
    std::vector<bool> blocked(2 * T, false);
    for (int64_t j : {3, 17, 40}) blocked[j] = blocked[T + j] = true;
    const Tensor pad = tensor(blocked, {2, T});
    Tensor add = zeros({T, T});
    for (int64_t i = 0; i < T; ++i) add.data<float>()[i * T + (i + 5) % T] = -INFINITY;
    for (const AttentionMask& m :
         {AttentionMask::key_padding(pad, MaskPolarity::TrueBlocked),
          AttentionMask::causal() & AttentionMask::key_padding(pad, MaskPolarity::TrueBlocked) &
              AttentionMask::additive(add)}) {
      Tensor kn = k.to(kFloat32);
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t e = 0; e < hs; ++e) {
            kn.data<float>()[((b * 2 + h) * T + 3) * hs + e] = NAN;
            kn.data<float>()[((b * 2 + h) * T + 17) * hs + e] = e % 2 ? INFINITY : -INFINITY;
          }
      const Run clean = plain(q, k, v, m, true), dirty = plain(q, kn.to(kBFloat16), v, m, true),
                f32 = plain(q, kn.to(kBFloat16), v, m, false);
      REQUIRE(clean.o == dirty.o);
      REQUIRE(clean.dv == dirty.dv);
      REQUIRE(clean.dk == dirty.dk);
      // dQ = scale·dS·K multiplies the blocked keys' NaN by dS = 0, as the float32 path does
      for (size_t e = 0; e < f32.dq.size(); ++e)
        REQUIRE(std::isnan(dirty.dq[e]) == std::isnan(f32.dq[e]));
    }
  }
  SECTION("NaN and inf in allowed positions propagate as on the float32 path") {
    Tensor qn = q.to(kFloat32), vn = v.to(kFloat32);
    qn.data<float>()[(0 * T + 9) * hs + 2] = NAN;        // batch 0, head 0, row 9
    qn.data<float>()[(1 * T + 30) * hs + 5] = INFINITY;  // batch 0, head 1, row 30
    vn.data<float>()[(2 * T + 12) * hs + 7] = NAN;       // batch 1, head 0, key 12
    for (const AttentionMask& m : {AttentionMask(), AttentionMask::causal()}) {
      const Run dot = plain(qn.to(kBFloat16), k, vn.to(kBFloat16), m, true),
                f32 = plain(qn.to(kBFloat16), k, vn.to(kBFloat16), m, false);
      for (const auto& [a, b] : {std::pair{&dot.o, &f32.o},
                                 {&dot.dq, &f32.dq},
                                 {&dot.dk, &f32.dk},
                                 {&dot.dv, &f32.dv}}) {
        REQUIRE(a->size() == b->size());
        for (size_t e = 0; e < a->size(); ++e) {
          INFO("element " << e);
          REQUIRE(std::isnan((*a)[e]) == std::isnan((*b)[e]));
          REQUIRE(std::isinf((*a)[e]) == std::isinf((*b)[e]));
        }
      }
      REQUIRE(std::isnan(dot.o[9 * hs]));
    }
  }
}
