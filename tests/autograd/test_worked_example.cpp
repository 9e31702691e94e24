// tests/autograd/test_worked_example.cpp — the worked example of docs/backprop-through-attention.md
// (one head, T = 2 queries, S = 3 keys, hs = 2), recomputed through
// tg::scaled_dot_product_attention with backward: every number of the document's tables (S, P,
// O, dP, dS, dQ, dK, dV) is checked against the kernel (to 5e-7, the tables print 6 decimals),
// against the document's formulas written as plain loops, and found verbatim in the document.
// Set TG_PRINT_WORKED_EXAMPLE=1 to print the tables (how the document's tables were made).
#include "ops/attention/attention.hpp"
#include "tests/helpers.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

using namespace tg;

namespace {
using Mat = std::vector<std::vector<double>>;

// The example's inputs, exactly as in the document.
const Mat kQ = {{0.1, -0.2}, {0.4, 0.3}};               // (T, hs)
const Mat kK = {{0.5, 0.1}, {-0.3, 0.2}, {0.2, -0.4}};  // (S, hs)
const Mat kV = {{1.0, -0.5}, {0.3, 0.8}, {-0.6, 0.2}};  // (S, hs)
const Mat kdO = {{0.2, -0.1}, {-0.3, 0.5}};             // (T, hs)

// The document's tables (6 decimals), produced by this test with TG_PRINT_WORKED_EXAMPLE=1.
const Mat kS = {{0.021213, -0.049497, 0.070711}, {0.162635, -0.042426, -0.028284}};
const Mat kP = {{0.335292, 0.312402, 0.352306}, {0.378674, 0.308467, 0.312860}};
const Mat kO = {{0.217629, 0.152737}, {0.283498, 0.120008}};
const Mat kdP = {{0.250000, -0.020000, -0.140000}, {-0.550000, 0.310000, 0.280000}};
const Mat kdS = {{0.074350, -0.015074, -0.059276}, {-0.198787, 0.103350, 0.095436}};
const Mat kdQ = {{0.021102, 0.019891}, {-0.078709, -0.026434}};
const Mat kdK = {{-0.050968, -0.052684}, {0.028166, 0.024056}, {0.022802, 0.028628}};
const Mat kdV = {{-0.046544, 0.155808}, {-0.030060, 0.122993}, {-0.023397, 0.121199}};

Tensor to_tensor(const Mat& m) {  // (1, 1, rows, cols) float64 leaf
  std::vector<double> v;
  for (const auto& r : m) v.insert(v.end(), r.begin(), r.end());
  return tensor(v, {1, 1, static_cast<int64_t>(m.size()), static_cast<int64_t>(m[0].size())})
      .requires_grad_();
}
Mat to_mat(const Tensor& t) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  std::vector<double> v = t.to_vector<double>();
  Mat m(rows, std::vector<double>(cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m[i][j] = v[i * cols + j];
  return m;
}
Mat matmul_t(const Mat& a, const Mat& b, bool ta, bool tb) {  // op(a)·op(b)
  const size_t n = ta ? a[0].size() : a.size(), k = ta ? a.size() : a[0].size();
  const size_t m = tb ? b.size() : b[0].size();
  Mat c(n, std::vector<double>(m, 0.0));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < m; ++j)
      for (size_t l = 0; l < k; ++l) c[i][j] += (ta ? a[l][i] : a[i][l]) * (tb ? b[j][l] : b[l][j]);
  return c;
}
// One markdown table row per matrix row: "| 0.021213 | -0.070711 | 0.070711 |".
std::string rows_md(const Mat& m) {
  std::string s;
  for (const auto& r : m) {
    s += "|";
    for (double x : r) s += fmt::format(" {:.6f} |", std::fabs(x) < 5e-7 ? 0.0 : x);
    s += "\n";
  }
  return s;
}
void require_mat(const Mat& got, const Mat& want, double tol, const std::string& what) {
  INFO(what << "\ngot\n" << rows_md(got) << "want\n" << rows_md(want));
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    for (size_t j = 0; j < got[i].size(); ++j) REQUIRE(std::fabs(got[i][j] - want[i][j]) <= tol);
}
}  // namespace

TEST_CASE("worked example of docs/backprop-through-attention.md matches the kernel",
          "[worked_example]") {
  Tensor q = to_tensor(kQ), k = to_tensor(kK), v = to_tensor(kV);
  Tensor scores, probs, dprobs, dscores;
  AttentionProbe probe;
  probe.on_forward = [&](const Tensor& s, const Tensor& p) { scores = s, probs = p; };
  probe.on_backward = [&](const Tensor& dp, const Tensor& ds) { dprobs = dp, dscores = ds; };
  SDPAOptions o;
  o.probe = &probe;
  Tensor out = scaled_dot_product_attention(q, k, v, {}, o).output;
  out.backward(to_tensor(kdO).detach());
  const std::vector<std::pair<std::string, Mat>> got = {
      {"S", to_mat(scores)},    {"P", to_mat(probs)},    {"O", to_mat(out)},
      {"dP", to_mat(dprobs)},   {"dS", to_mat(dscores)}, {"dQ", to_mat(q.grad())},
      {"dK", to_mat(k.grad())}, {"dV", to_mat(v.grad())}};
  if (std::getenv("TG_PRINT_WORKED_EXAMPLE"))
    for (const auto& [name, m] : got) fmt::print("{}\n{}\n", name, rows_md(m));
  const Mat* want[] = {&kS, &kP, &kO, &kdP, &kdS, &kdQ, &kdK, &kdV};
  for (size_t i = 0; i < got.size(); ++i) require_mat(got[i].second, *want[i], 5e-7, got[i].first);
}

TEST_CASE("worked example: the document's formulas, as plain loops, give its numbers",
          "[worked_example]") {
  const double scale = 1 / std::sqrt(2.0);
  Mat S = matmul_t(kQ, kK, false, true), P = S;  // S = scale·Q·Kᵀ
  for (auto& r : S)
    for (double& x : r) x *= scale;
  for (size_t i = 0; i < S.size(); ++i) {  // P = softmax(S) per row
    double mx = -INFINITY, sum = 0;
    for (double x : S[i]) mx = std::max(mx, x);
    for (size_t j = 0; j < S[i].size(); ++j) sum += P[i][j] = std::exp(S[i][j] - mx);
    for (double& x : P[i]) x /= sum;
  }
  Mat O = matmul_t(P, kV, false, false);
  Mat dV = matmul_t(P, kdO, true, false);   // dV = Pᵀ·dO
  Mat dP = matmul_t(kdO, kV, false, true);  // dP = dO·Vᵀ
  Mat dS = dP;                              // dS = P ⊙ (dP − rowsum(dP ⊙ P))
  for (size_t i = 0; i < dS.size(); ++i) {
    double dot = 0;
    for (size_t j = 0; j < dS[i].size(); ++j) dot += dP[i][j] * P[i][j];
    for (size_t j = 0; j < dS[i].size(); ++j) dS[i][j] = P[i][j] * (dP[i][j] - dot);
  }
  Mat dQ = matmul_t(dS, kK, false, false), dK = matmul_t(dS, kQ, true, false);
  for (Mat* m : {&dQ, &dK})
    for (auto& r : *m)
      for (double& x : r) x *= scale;  // dQ = scale·dS·K, dK = scale·dSᵀ·Q
  require_mat(S, kS, 5e-7, "S");
  require_mat(P, kP, 5e-7, "P");
  require_mat(O, kO, 5e-7, "O");
  require_mat(dP, kdP, 5e-7, "dP");
  require_mat(dS, kdS, 5e-7, "dS");
  require_mat(dQ, kdQ, 5e-7, "dQ");
  require_mat(dK, kdK, 5e-7, "dK");
  require_mat(dV, kdV, 5e-7, "dV");
  // Each row of P sums to 1, each row of dS to 0 (softmax is shift-invariant).
  for (size_t i = 0; i < 2; ++i) {
    REQUIRE(P[i][0] + P[i][1] + P[i][2] == Approx(1).epsilon(1e-12));
    REQUIRE(std::fabs(dS[i][0] + dS[i][1] + dS[i][2]) < 1e-12);
  }
}

TEST_CASE("worked example: every table of the document is in the document verbatim",
          "[worked_example]") {
  std::ifstream f(std::string(TG_FIXTURES) + "/../../docs/backprop-through-attention.md");
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str();
  const std::pair<const char*, const Mat*> tables[] = {
      {"Q", &kQ}, {"K", &kK},   {"V", &kV},   {"dO", &kdO}, {"S", &kS},   {"P", &kP},
      {"O", &kO}, {"dP", &kdP}, {"dS", &kdS}, {"dQ", &kdQ}, {"dK", &kdK}, {"dV", &kdV}};
  for (const auto& [name, m] : tables) {
    INFO("table " << name << " rows:\n" << rows_md(*m));
    REQUIRE(doc.find(rows_md(*m)) != std::string::npos);
  }
}

// ---- §7 of the document: the second order on the same example ----
namespace {
const Mat kgQ = {{0.3, 0.1}, {-0.2, 0.4}};               // cotangent of dQ (T, hs)
const Mat kgK = {{0.1, -0.3}, {0.2, 0.2}, {-0.1, 0.5}};  // cotangent of dK (S, hs)
const Mat kgV = {{0.4, 0.0}, {-0.2, 0.1}, {0.3, -0.3}};  // cotangent of dV (S, hs)
// The document's §7 tables, produced by this test with TG_PRINT_WORKED_EXAMPLE=1.
const Mat kA = {{0.162635, -0.063640, -0.063640}, {-0.077782, 0.197990, -0.063640}};
const Mat kE = {{0.050430, -0.023701, -0.026729}, {-0.033888, 0.057461, -0.023574}};
const Mat kG = {{0.113007, -0.046685, 0.102419}, {-0.072728, 0.172706, -0.262691}};
const Mat kH = {{0.017978, -0.033138, 0.015160}, {-0.006163, 0.070687, -0.064524}};
const Mat kQ2 = {{0.022847, -0.046564}, {-0.032488, 0.118338}};
const Mat kK2 = {{0.043413, -0.054818}, {-0.000163, 0.047847}, {-0.043249, 0.006970}};
const Mat kV2 = {{0.020252, -0.021987}, {-0.021979, 0.031101}, {0.001726, -0.009114}};
const Mat kdO2 = {{0.236685, -0.123973}, {0.181129, -0.004813}};

// §7's formulas as plain loops: A, E, G, H and the four results, from the §5 tables' inputs.
std::vector<std::pair<std::string, Mat>> second_order_loops() {
  const double scale = 1 / std::sqrt(2.0);
  const size_t T = 2, S = 3, hs = 2;
  Mat P(T, std::vector<double>(S)), dP = matmul_t(kdO, kV, false, true);
  for (size_t i = 0; i < T; ++i) {
    double mx = -INFINITY, z = 0;
    std::vector<double> s(S);
    for (size_t j = 0; j < S; ++j) {
      s[j] = scale * (kQ[i][0] * kK[j][0] + kQ[i][1] * kK[j][1]);
      mx = std::max(mx, s[j]);
    }
    for (size_t j = 0; j < S; ++j) z += P[i][j] = std::exp(s[j] - mx);
    for (size_t j = 0; j < S; ++j) P[i][j] /= z;
  }
  Mat A(T, std::vector<double>(S)), E = A, G = A, H = A, dS = A;
  Mat Q2(T, std::vector<double>(hs, 0.0)), dO2 = Q2, K2(S, std::vector<double>(hs, 0.0)), V2 = K2;
  for (size_t i = 0; i < T; ++i) {
    double D = 0, a = 0, c = 0;
    std::vector<double> B(S);
    for (size_t j = 0; j < S; ++j) {
      A[i][j] = scale * (kgQ[i][0] * kK[j][0] + kgQ[i][1] * kK[j][1] + kQ[i][0] * kgK[j][0] +
                         kQ[i][1] * kgK[j][1]);
      B[j] = kdO[i][0] * kgV[j][0] + kdO[i][1] * kgV[j][1];
      D += P[i][j] * dP[i][j];
      a += P[i][j] * A[i][j];
    }
    for (size_t j = 0; j < S; ++j) {
      dS[i][j] = P[i][j] * (dP[i][j] - D);
      E[i][j] = P[i][j] * (A[i][j] - a);
      G[i][j] = A[i][j] * (dP[i][j] - D) - a * dP[i][j] + B[j];
      c += P[i][j] * G[i][j];
    }
    for (size_t j = 0; j < S; ++j) H[i][j] = P[i][j] * (G[i][j] - c);
    for (size_t j = 0; j < S; ++j)
      for (size_t t = 0; t < hs; ++t) {
        Q2[i][t] += scale * (dS[i][j] * kgK[j][t] + H[i][j] * kK[j][t]);
        K2[j][t] += scale * (dS[i][j] * kgQ[i][t] + H[i][j] * kQ[i][t]);
        V2[j][t] += E[i][j] * kdO[i][t];
        dO2[i][t] += P[i][j] * kgV[j][t] + E[i][j] * kV[j][t];
      }
  }
  return {{"A", A}, {"E", E}, {"G", G}, {"H", H}, {"Q2", Q2}, {"K2", K2}, {"V2", V2}, {"dO2", dO2}};
}
}  // namespace

TEST_CASE("worked example, second order: the kernel, the formulas and the document agree",
          "[worked_example]") {
  // Through the library: dQ, dK, dV with create_graph, then the gradient of
  // L = Σ gQ·dQ + gK·dK + gV·dV with respect to Q, K, V and dO.
  Tensor q = to_tensor(kQ), k = to_tensor(kK), v = to_tensor(kV), dO = to_tensor(kdO);
  Tensor out = scaled_dot_product_attention(q, k, v).output;
  GradOptions cg;
  cg.create_graph = true;
  const std::vector<Tensor> d = grad({out}, {q, k, v}, {dO}, cg);
  const Tensor L = (d[0] * to_tensor(kgQ).detach()).sum() + (d[1] * to_tensor(kgK).detach()).sum() +
                   (d[2] * to_tensor(kgV).detach()).sum();
  const std::vector<Tensor> g2 = grad({L}, {q, k, v, dO});
  const auto loops = second_order_loops();
  if (std::getenv("TG_PRINT_WORKED_EXAMPLE"))
    for (const auto& [name, m] : loops) fmt::print("{}\n{}\n", name, rows_md(m));
  const Mat* want[] = {&kA, &kE, &kG, &kH, &kQ2, &kK2, &kV2, &kdO2};
  for (size_t i = 0; i < loops.size(); ++i)
    require_mat(loops[i].second, *want[i], 5e-7, loops[i].first);
  require_mat(to_mat(g2[0]), kQ2, 5e-7, "Q2 (kernel)");
  require_mat(to_mat(g2[1]), kK2, 5e-7, "K2 (kernel)");
  require_mat(to_mat(g2[2]), kV2, 5e-7, "V2 (kernel)");
  require_mat(to_mat(g2[3]), kdO2, 5e-7, "dO2 (kernel)");
  std::ifstream f(std::string(TG_FIXTURES) + "/../../docs/backprop-through-attention.md");
  std::stringstream ss;
  ss << f.rdbuf();
  for (const auto& [name, m] : std::vector<std::pair<const char*, const Mat*>>{{"gQ", &kgQ},
                                                                               {"gK", &kgK},
                                                                               {"gV", &kgV},
                                                                               {"A", &kA},
                                                                               {"E", &kE},
                                                                               {"G", &kG},
                                                                               {"H", &kH},
                                                                               {"Q2", &kQ2},
                                                                               {"K2", &kK2},
                                                                               {"V2", &kV2},
                                                                               {"dO2", &kdO2}}) {
    INFO("table " << name << " rows:\n" << rows_md(*m));
    REQUIRE(ss.str().find(rows_md(*m)) != std::string::npos);
  }
}
