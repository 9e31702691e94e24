// tests/dist/test_zero_strided.cpp — ZeRO-1 and DDP with parameters that are strided views (a
// transposed weight, a narrowed one): the broadcast at construction, the buckets, the sharded
// AdamW step and the all-gather write through the views into their own storage, and the run
// equals the same run on contiguous copies, bit for bit; strided tensors in the collectives.
#include "model.hpp"

using namespace tdt;
namespace td = tg::dist;

namespace {
// w (5, 4) = a.t() of a (4, 5), strides (1, 5); v (3, 4) = b[:, 1:5] of b (3, 6), strides (6, 1)
// at offset 1. contiguous = true: the same values in row-major tensors of their own.
struct TwoViews : nn::Module {
  Tensor a, b, w, v;
  TwoViews(uint64_t seed, bool contiguous) : nn::Module("TwoViews") {
    manual_seed(seed);
    a = randn({4, 5}, kFloat64);
    b = randn({3, 6}, kFloat64);
    w = (contiguous ? a.t().contiguous() : a.t()).detach();
    v = (contiguous ? b.narrow(1, 1, 4).contiguous() : b.narrow(1, 1, 4)).detach();
    register_parameter("w", &w);
    register_parameter("v", &v);
  }
  // x (B, 5) -> tanh(x·w) (B, 4) -> ·vᵀ (B, 3), squared error against y.
  Tensor loss(const Tensor& x, const Tensor& y) {
    return (matmul(tanh(matmul(x, w)), v.t()) - y).pow(2.0).mean();
  }
};

// Micro-batch (step s, rank r): x (2, 5), y (2, 3).
std::pair<Tensor, Tensor> views_batch(int64_t s, int64_t r) {
  manual_seed(500 + 31 * static_cast<uint64_t>(s) + static_cast<uint64_t>(r));
  Tensor x = randn({2, 5}, kFloat64), y = randn({2, 3}, kFloat64);
  return {x, y};
}

// Five ZeRO-1 steps; the parameters' values (w then v, row-major) and the consolidated state.
struct ZeroRun {
  std::vector<double> params, exp_avg;
};
ZeroRun zero_steps(const std::shared_ptr<TwoViews>& net, double bucket_cap_mb) {
  nn::DDPOptions o;
  o.bucket_cap_mb = bucket_cap_mb;
  o.zero1 = true;
  nn::DistributedDataParallel ddp(net, o);
  nn::AdamWOptions ao(0.05);
  ao.weight_decay = 0.1;
  nn::ZeroRedundancyAdamW opt(ddp, ao);
  for (int64_t s = 0; s < 5; ++s) {
    opt.zero_grad();
    auto [x, y] = views_batch(s, td::rank());
    net->loss(x, y).backward();
    opt.step();
  }
  opt.consolidate_state_dict();
  ZeroRun r;
  r.params = flat_params(*net);
  for (const auto& [i, ps] : opt.state_dict().state) {
    auto m = ps.tensors.at("exp_avg").to_vector<double>();
    r.exp_avg.insert(r.exp_avg.end(), m.begin(), m.end());
  }
  return r;
}
}  // namespace

TEST_CASE("ddp: ZeRO-1 steps strided parameters in their own storage, as contiguous ones",
          "[zero]") {
  const int R = td::rank();
  // ~100 bytes: one bucket per parameter, each split between the ranks (a piece at offset > 0
  // of a strided parameter on rank 1); then one bucket holding both.
  for (double cap : {1e-4, 25.0}) {
    INFO("bucket_cap_mb " << cap);
    // Rank-dependent starting values: DDP's broadcast must reach the views.
    auto strided = std::make_shared<TwoViews>(7 + static_cast<uint64_t>(R), false);
    auto dense = std::make_shared<TwoViews>(7, true);
    REQUIRE_FALSE(strided->w.is_contiguous());
    REQUIRE_FALSE(strided->v.is_contiguous());
    const Tensor b_start = strided->b.clone();
    const ZeroRun got = zero_steps(strided, cap), want = zero_steps(dense, cap);
    REQUIRE(got.params == want.params);
    REQUIRE(got.exp_avg == want.exp_avg);
    TwoViews start(7, true);
    REQUIRE(got.params != flat_params(start));  // it trained
    // The steps went into the views' storage: a is wᵀ; b's columns 0 and 5 are untouched.
    REQUIRE(strided->a.to_vector<double>() == dense->w.t().contiguous().to_vector<double>());
    for (int64_t c : {0, 5})
      REQUIRE(strided->b.narrow(1, c, 1).to_vector<double>() ==
              b_start.narrow(1, c, 1).to_vector<double>());
  }
}

TEST_CASE(
    "dist: all_reduce and broadcast write strided tensors through their views; the async "
    "collectives refuse them naming the view",
    "[zero]") {
  const int W = td::world_size(), R = td::rank();
  Tensor base = full({4, 3}, 1.0 + R, kFloat64);
  Tensor t = base.t();  // (3, 4), strides (1, 3)
  td::all_reduce(t, td::ReduceOp::Sum);
  REQUIRE(base.to_vector<double>() == std::vector<double>(12, W * (W + 1) / 2.0));
  Tensor wide = full({3, 6}, 10.0 * R, kFloat64);
  Tensor mid = wide.narrow(1, 1, 4);
  if (R == 0) mid.copy_(arange(0.0, 12.0, 1.0, kFloat64).reshape({3, 4}));
  td::broadcast(mid, 0);
  REQUIRE(mid.to_vector<double>() == arange(0.0, 12.0, 1.0, kFloat64).to_vector<double>());
  REQUIRE(wide.narrow(1, 0, 1).to_vector<double>() == std::vector<double>(3, 10.0 * R));
  // all_gather (the list form) reads a strided input in its shape's order.
  std::vector<Tensor> parts = td::all_gather(t);
  REQUIRE(parts.size() == static_cast<size_t>(W));
  REQUIRE(parts[0].to_vector<double>() == t.to_vector<double>());
  Tensor out = zeros({W * 12}, kFloat64);
  REQUIRE_ERROR(td::all_gather_into_tensor(out, t),
                "all_gather: the input (3,4) is a strided view (strides (1,3))");
  REQUIRE_ERROR(td::all_reduce_async(t, td::ReduceOp::Sum),
                "all_reduce: the tensor (3,4) is a strided view");
  Tensor shard = zeros({12 / W}, kFloat64);
  REQUIRE_ERROR(td::reduce_scatter_tensor(shard, t),
                "reduce_scatter: the input (3,4) is a strided view");
}
