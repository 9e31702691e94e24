// tests/autograd/test_anomaly.cpp — anomaly mode: a NaN/Inf made by a forward or returned by a
// backward throws naming the op, the node, the creation site and the element; softmax reports the
// row, attention (SDPA and the MHA path) the batch, head and query row. Off, nothing is checked.
#include "helpers.hpp"

#include "autograd/anomaly.hpp"
#include "nn/attention.hpp"
#include "ops/attention/attention.hpp"

#include <cmath>
#include <limits>

using namespace tg;

namespace {
std::string at(int line) { return "created at test_anomaly.cpp:" + std::to_string(line) + ")"; }

// A test-only op whose backward returns NaN: out = x, dx = NaN everywhere.
Tensor nan_grad(const Tensor& x, Site site = Site::here()) {
  SiteScope scope(site);
  Tensor out = x.detach().clone();
  record("nan_grad", out, {x}, [](const Tensor& g) -> std::vector<Tensor> {
    return {full_like(g, std::numeric_limits<double>::quiet_NaN())};
  });
  return out;
}

// The tape position the next recorded node will get.
uint64_t next_seq() {
  Tensor p = ones({1}).requires_grad_();
  return (p * 1.0).grad_fn()->seq + 1;
}
}  // namespace

TEST_CASE("anomaly: a NaN made by a forward names op, node, site and element") {
  AnomalyGuard guard;
  REQUIRE(anomaly_enabled());
  Tensor x = tensor(std::vector<double>{4, -1, 9}).requires_grad_();
  const uint64_t seq = next_seq();
  const int line = __LINE__ + 1;
  REQUIRE_ERROR(tg::sqrt(x), "anomaly: forward of sqrt (node #" + std::to_string(seq) + ", " +
                                 at(line) + " produced nan in output (3) at (1)");
}

TEST_CASE("anomaly: a NaN returned by a backward names op, node, site and input") {
  AnomalyGuard guard;
  Tensor x = tensor(std::vector<double>{1, 2, 3}).requires_grad_();
  const uint64_t seq = next_seq();
  const int line = __LINE__ + 1;
  Tensor y = nan_grad(x);
  Tensor loss = (y * 2.0).sum();
  REQUIRE_ERROR(loss.backward(), "anomaly: backward of nan_grad (node #" + std::to_string(seq) +
                                     ", " + at(line) +
                                     " produced nan in the gradient for input 0 (3) at (0)");
}

TEST_CASE("anomaly: sqrt at 0 gives an infinite gradient in backward") {
  AnomalyGuard guard;
  Tensor x = tensor(std::vector<double>{1, 0}).requires_grad_();
  const uint64_t seq = next_seq();
  const int line = __LINE__ + 1;
  Tensor loss = x.sqrt().sum();  // forward is finite: sqrt(0) = 0
  REQUIRE_ERROR(loss.backward(), "anomaly: backward of sqrt (node #" + std::to_string(seq) + ", " +
                                     at(line) +
                                     " produced inf in the gradient for input 0 (2) at (1)");
}

TEST_CASE("anomaly: off, non-finite values pass silently") {
  REQUIRE_FALSE(anomaly_enabled());
  Tensor x = tensor(std::vector<double>{-1}).requires_grad_();
  Tensor y = nan_grad(tg::sqrt(x));
  REQUIRE(std::isnan(y.item<double>()));
  y.backward();
  REQUIRE(std::isnan(x.grad().item<double>()));
  {
    AnomalyGuard off(false);  // a guard can also switch it off in its scope
    REQUIRE_FALSE(anomaly_enabled());
  }
}

TEST_CASE("anomaly: softmax reports the row of the first non-finite element") {
  AnomalyGuard guard;
  Tensor x = zeros({2, 3, 5}, kFloat64);
  x.data<double>()[(1 * 3 + 2) * 5 + 3] = std::numeric_limits<double>::quiet_NaN();
  x.requires_grad_();
  const int line = __LINE__ + 1;
  REQUIRE_ERROR(softmax(x, -1), "anomaly: forward of softmax");
  REQUIRE_ERROR(log_softmax(x, -1),
                at(line + 1) + " produced nan in output (2,3,5) at (1,2,0): row (1,2) over dim 2");
  // Over dim 1 the rows are (i0, i2): the NaN at (1, 2, 3) spoils row (1, 3).
  REQUIRE_ERROR(softmax(x, 1), "at (1,0,3): row (1,3) over dim 1");
}

TEST_CASE("anomaly: attention reports batch, head and query row") {
  AnomalyGuard guard;
  manual_seed(5);
  const int64_t B = 2, NH = 3, T = 4, hs = 8;
  Tensor q = randn({B, NH, T, hs}), k = randn({B, NH, T, hs}), v = randn({B, NH, T, hs});
  float* pq = q.data<float>();
  for (int64_t c = 0; c < hs; ++c)  // query row t = 3 of head h = 2 in batch b = 1
    pq[((1 * NH + 2) * T + 3) * hs + c] = std::numeric_limits<float>::quiet_NaN();
  q.requires_grad_();
  const int line = __LINE__ + 1;
  REQUIRE_ERROR(scaled_dot_product_attention(q, k, v, AttentionMask::causal()),
                "anomaly: forward of scaled_dot_product_attention");
  REQUIRE_ERROR(scaled_dot_product_attention(q, k, v),
                at(line + 2) + " produced nan in output (2,3,4,8) at (1,2,3,0): b=1, h=2, t=3");
}

TEST_CASE("anomaly: the MHA path reports where attention itself overflows") {
  // Token t = 2 of batch 1 is huge but finite: its projections stay finite, its score with itself
  // overflows to +inf and its softmax row becomes NaN (inf - inf) inside the attention kernel.
  // Causal: earlier rows never see that key, so the first bad row is (b=1, h=0, t=2).
  AnomalyGuard guard;
  manual_seed(6);
  nn::MultiheadAttentionOptions mo;
  mo.batch_first = true;
  nn::MultiheadAttention mha(8, 2, mo);
  // Identity projections: q = k = v = x, so the score of token 2 with itself is |x|² = +inf.
  float* w = mha.in_proj_weight.data<float>();
  for (int64_t r = 0; r < 24; ++r)
    for (int64_t c = 0; c < 8; ++c) w[r * 8 + c] = (r % 8 == c) ? 1.0f : 0.0f;
  Tensor x = randn({2, 4, 8});
  for (int64_t c = 0; c < 8; ++c) x.data<float>()[(1 * 4 + 2) * 8 + c] = 1e20f;
  x.requires_grad_();
  nn::MHAForwardOptions f;
  f.is_causal = true;
  f.need_weights = false;
  REQUIRE_ERROR(mha.forward(x, x, x, f), "anomaly: forward of scaled_dot_product_attention");
  // The module's attention output is heads last, (B, T, NH, hs): the row is named in that order.
  REQUIRE_ERROR(mha.forward(x, x, x, f), ": b=1, t=2, h=0");
}
