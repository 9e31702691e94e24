// tests/autograd/test_profiler.cpp — the profiler's cost model and accounting: matmul FLOPs are
// exactly 2·M·N·K forward and twice that backward, local attention computes about (W + tile)/T of
// full attention's pairs, backward times are attributed to their nodes, and the table sums by op.
#include "helpers.hpp"

#include "autograd/profiler.hpp"
#include "ops/attention/attention.hpp"

using namespace tg;

namespace {
const ProfileEvent& find_event(const Profiler& p, const std::string& op) {
  for (const ProfileEvent& e : p.events())
    if (e.op == op) return e;
  FAIL("no event " << op);
  return p.events().front();
}

// Forward and backward FLOPs of one SDPA call (B = NH = 1, T = S, hs = 16) under a mask.
std::pair<double, double> sdpa_flops(const AttentionMask& mask, int64_t T) {
  manual_seed(2);
  Tensor q = randn({1, 1, T, 16}).requires_grad_(), k = randn({1, 1, T, 16}),
         v = randn({1, 1, T, 16});
  Profiler prof;
  Tensor out = scaled_dot_product_attention(q, k, v, mask).output;
  out.sum().backward();
  const ProfileEvent& e = find_event(prof, "scaled_dot_product_attention");
  REQUIRE(e.bwd_calls == 1);
  return {e.fwd_flops, e.bwd_flops};
}
}  // namespace

TEST_CASE("profiler: matmul FLOPs are exactly 2·M·N·K forward and twice that backward") {
  manual_seed(1);
  const int64_t M = 4, K = 5, N = 6;
  Tensor a = randn({M, K}).requires_grad_(), b = randn({K, N}).requires_grad_();
  Profiler prof;
  Tensor y = matmul(a, b);
  Tensor loss = y.sum();
  loss.backward();
  prof.stop();
  const ProfileEvent& e = find_event(prof, "matmul");
  REQUIRE(e.fwd_flops == 2.0 * M * N * K);
  REQUIRE(e.bwd_flops == 4.0 * M * N * K);
  REQUIRE_FALSE(e.flops_estimated);
  REQUIRE(e.saved_bytes == (M * K + K * N) * 4);
  REQUIRE(e.bwd_calls == 1);
  REQUIRE(e.bwd_ns > 0);
  REQUIRE(e.site.str().rfind("test_profiler.cpp:", 0) == 0);
  REQUIRE(prof.events().size() == 2);
  REQUIRE(prof.total_fwd_flops() == 2.0 * M * N * K + M * N);  // + sum's adds
  // Only a's gradient: backward counts one product.
  Profiler p2;
  Tensor c = randn({M, K});
  matmul(c, b).sum().backward();
  REQUIRE(find_event(p2, "matmul").bwd_flops == 2.0 * M * N * K);
  // linear: x (N, Cin), W (Cout, Cin), bias: 2·N·Cin·Cout + N·Cout.
  Tensor x = randn({3, K}).requires_grad_(), W = randn({N, K}), bias = randn({N});
  linear(x, W, bias);
  REQUIRE(find_event(p2, "linear").fwd_flops == 2.0 * 3 * K * N + 3 * N);
}

TEST_CASE("profiler: local attention computes about (W + 64)/T of full attention's pairs") {
  const int64_t T = 1024, W = 128;
  auto [ffull, bfull] = sdpa_flops(AttentionMask(), T);
  auto [floc, bloc] = sdpa_flops(AttentionMask::local(W, 0), T);
  // Full: T² pairs. Local (W, 0): 64-row tiles, each spanning its rows' key ranges:
  // 64·(64 + 128 + 14·192) = 184320 pairs. Per pair 2·16 + 2·16 + 5 forward, 4·16 + 4·16 + 3 back.
  REQUIRE(ffull == double(T) * T * 69);
  REQUIRE(bfull == double(T) * T * 131);
  REQUIRE(floc == 184320.0 * 69);
  REQUIRE(bloc == 184320.0 * 131);
  const double ratio = floc / ffull;  // 0.176, vs W/T = 0.125 (tile granularity adds 64/T)
  REQUIRE(ratio > double(W) / T);
  REQUIRE(ratio < double(W + 64) / T);
  // Causal computes about half.
  auto [fcausal, bcausal] = sdpa_flops(AttentionMask::causal(), T);
  REQUIRE(fcausal / ffull == Approx(0.5).margin(0.04));
}

TEST_CASE("profiler: key_averages sums by op and the table lists every op") {
  manual_seed(4);
  Tensor x = randn({8, 16}).requires_grad_();
  Tensor w = randn({16, 16}).requires_grad_();
  Profiler prof;
  Tensor h = x;
  for (int i = 0; i < 3; ++i) h = tg::tanh(matmul(h, w));
  Tensor loss = softmax(h, -1).sum();
  loss.backward();
  prof.stop();
  Tensor after = matmul(x, w);  // not recorded: the profiler stopped
  const std::vector<ProfileRow> rows = prof.key_averages();
  REQUIRE(rows.size() == 4);  // matmul, tanh, softmax, sum
  double pct = 0;
  for (const ProfileRow& r : rows) {
    pct += r.pct;
    if (r.op == "matmul") {
      REQUIRE(r.calls == 3);
      REQUIRE(r.fwd_gflop == Approx(3 * 2.0 * 8 * 16 * 16 * 1e-9));
      REQUIRE(r.bwd_gflop == Approx(3 * 4.0 * 8 * 16 * 16 * 1e-9));
    }
  }
  REQUIRE(pct == Approx(100));
  for (size_t i = 1; i < rows.size(); ++i)
    REQUIRE(rows[i - 1].fwd_ms + rows[i - 1].bwd_ms >= rows[i].fwd_ms + rows[i].bwd_ms);
  const std::string t = prof.table();
  REQUIRE(t.find("op                              calls     fwd ms") == 0);
  REQUIRE(t.find("matmul") != std::string::npos);
  REQUIRE(t.find("\ntotal ") != std::string::npos);
}
