// tests/dist/test_ddp.cpp — DistributedDataParallel on 2 ranks equals one process doing gradient
// accumulation over the same micro-batches (float64, 20 AdamW steps, <= 1e-12); the same with
// no_sync accumulation and with ZeRO-1; the structure check, unused parameters, buckets.
#include "model.hpp"

using namespace tdt;
namespace td = tg::dist;

namespace {
// `steps` AdamW steps of net (wrapped in DDP by the caller) on this rank's micro-batches, then
// the largest difference from one process accumulating every rank's micro-batches.
double steps_against_reference(TinyNet& net, int R, int W, int64_t steps) {
  nn::AdamW opt(groups(net), adamw());
  for (int64_t s = 0; s < steps; ++s) {
    opt.zero_grad();
    auto [x, y] = batch(s, R);
    net.loss(x, y).backward();
    opt.step();
  }
  auto ref = make_net(1);
  nn::AdamW ref_opt(groups(*ref), adamw());
  reference_steps(*ref, ref_opt, 0, steps, W);
  return max_abs_diff(flat_params(net), flat_params(*ref));
}
}  // namespace

TEST_CASE("ddp: 20 AdamW steps on N ranks equal gradient accumulation in one process", "[ddp]") {
  const int W = td::world_size(), R = td::rank();
  // Every rank starts from different weights: DDP must broadcast rank 0's (seed 1).
  auto net = make_net(1 + static_cast<uint64_t>(R));
  nn::DDPOptions o;
  o.bucket_cap_mb = 0.001;  // ~1 KB: several buckets, launched during backward
  nn::DistributedDataParallel ddp(net, o);
  REQUIRE(ddp.num_buckets() >= 3);
  const double d = steps_against_reference(*net, R, W, 20);
  INFO("max |ddp - reference| = " << d);
  REQUIRE(d <= 1e-12);
  // The weights moved (the test compares trained models, not two copies of the start).
  REQUIRE(max_abs_diff(flat_params(*net), flat_params(*make_net(1))) > 1e-2);
  const auto st = ddp.stats();
  REQUIRE(st.syncs == 20);
  REQUIRE(st.launched_in_backward == 20 * ddp.num_buckets());
  REQUIRE(st.launched_at_end == 0);
}

TEST_CASE("ddp: a checkpointed layer gives the same steps, its buckets launched in backward",
          "[ddp]") {
  const int W = td::world_size(), R = td::rank();
  auto net = make_net(1);
  net->checkpointed = true;
  nn::DDPOptions o;
  o.bucket_cap_mb = 0.001;
  nn::DistributedDataParallel ddp(net, o);
  const double d = steps_against_reference(*net, R, W, 5);
  INFO("max |ddp with checkpoint - reference| = " << d);
  REQUIRE(d <= 1e-12);
  const auto st = ddp.stats();
  REQUIRE(st.launched_in_backward == 5 * ddp.num_buckets());
  REQUIRE(st.launched_at_end == 0);
}

TEST_CASE("ddp: no_sync accumulation equals accumulation over every micro-batch", "[ddp]") {
  const int W = td::world_size(), R = td::rank();
  auto net = make_net(1);
  nn::DistributedDataParallel ddp(net);
  nn::AdamW opt(groups(*net), adamw());
  // Rank r takes micro-batches r and W + r; the first backward only accumulates.
  for (int64_t s = 0; s < 20; ++s) {
    opt.zero_grad();
    {
      auto guard = ddp.no_sync();
      auto [x, y] = batch(s, R);
      (net->loss(x, y) * 0.5).backward();
    }
    auto [x, y] = batch(s, W + R);
    (net->loss(x, y) * 0.5).backward();
    opt.step();
  }
  REQUIRE(ddp.stats().syncs == 20);
  auto ref = make_net(1);
  nn::AdamW ref_opt(groups(*ref), adamw());
  reference_steps(*ref, ref_opt, 0, 20, W, /*micro=*/2);
  const double d = max_abs_diff(flat_params(*net), flat_params(*ref));
  INFO("max |ddp no_sync - reference| = " << d);
  REQUIRE(d <= 1e-12);
}

TEST_CASE("ddp: ZeRO-1 (sharded AdamW) equals the same reference", "[zero]") {
  const int W = td::world_size(), R = td::rank();
  auto net = make_net(1 + static_cast<uint64_t>(R));
  nn::DDPOptions o;
  o.bucket_cap_mb = 0.001;
  o.zero1 = true;
  nn::DistributedDataParallel ddp(net, o);
  nn::ZeroRedundancyAdamW opt(ddp, groups(*net), adamw());
  const int64_t total = net->num_parameters();
  // Each rank holds about 1/W of each moment (buckets padded to a multiple of W).
  REQUIRE(opt.shard_numel() * W >= total);
  REQUIRE(opt.shard_numel() * W <= total + ddp.num_buckets() * W);
  for (int64_t s = 0; s < 20; ++s) {
    opt.zero_grad();
    auto [x, y] = batch(s, R);
    net->loss(x, y).backward();
    opt.step();
  }
  auto ref = make_net(1);
  nn::AdamW ref_opt(groups(*ref), adamw());
  reference_steps(*ref, ref_opt, 0, 20, W);
  const double d = max_abs_diff(flat_params(*net), flat_params(*ref));
  INFO("max |zero1 - reference| = " << d);
  REQUIRE(d <= 1e-12);
  // The consolidated state is AdamW's own: equal to the reference optimizer's state.
  opt.consolidate_state_dict();
  nn::OptimizerState a = opt.state_dict(), b = ref_opt.state_dict();
  REQUIRE(a.optimizer == "AdamW");
  REQUIRE(a.state.size() == b.state.size());
  for (auto& [i, ps] : b.state) {
    REQUIRE(a.state.at(i).numbers.at("step") == ps.numbers.at("step"));
    for (const char* key : {"exp_avg", "exp_avg_sq"}) {
      auto x = a.state.at(i).tensors.at(key).to_vector<double>();
      auto y = ps.tensors.at(key).to_vector<double>();
      REQUIRE(max_abs_diff(x, y) <= 1e-12);
    }
  }
  // step() without a new synchronised backward is refused.
  REQUIRE_ERROR(opt.step(), "without a synchronising backward");
}

TEST_CASE("ddp: ZeRO-1 clip_grad_norm_ equals nn::clip_grad_norm_ on the averaged gradient",
          "[zero]") {
  const int W = td::world_size(), R = td::rank();
  auto net = make_net(1);
  nn::DDPOptions o;
  o.zero1 = true;
  nn::DistributedDataParallel ddp(net, o);
  nn::ZeroRedundancyAdamW opt(ddp, groups(*net), adamw());
  for (int64_t s = 0; s < 3; ++s) {
    opt.zero_grad();
    auto [x, y] = batch(s, R);
    net->loss(x, y).backward();
    const double norm = opt.clip_grad_norm_(0.05);
    opt.step();
    (void)norm;
  }
  auto ref = make_net(1);
  nn::AdamW ref_opt(groups(*ref), adamw());
  double ref_norm = 0;
  reference_steps(*ref, ref_opt, 0, 3, W, 1,
                  [&](int64_t) { ref_norm = nn::clip_grad_norm_(ref->parameters(), 0.05); });
  REQUIRE(ref_norm > 0.05);  // clipping was active
  REQUIRE(max_abs_diff(flat_params(*net), flat_params(*ref)) <= 1e-12);
}

TEST_CASE("ddp: a model that differs across ranks is refused naming the entry", "[ddp]") {
  const int R = td::rank();
  manual_seed(1);
  auto net = std::make_shared<TinyNet>(false, R == 0 ? 8 : 6);
  try {
    nn::DistributedDataParallel ddp(net);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    REQUIRE_THAT(msg, Catch::Contains("the model differs across ranks at entry"));
    REQUIRE_THAT(msg, Catch::Contains("rank 0 has parameter layer.self_attn.in_proj_weight "
                                      "float64 (24,8)"));
    REQUIRE_THAT(msg, Catch::Contains("rank 1 has parameter layer.self_attn.in_proj_weight "
                                      "float64 (18,6)"));
  }
}

TEST_CASE("ddp: a parameter without gradient is an error, or zero with find_unused_parameters",
          "[ddp]") {
  const int R = td::rank();
  {
    auto net = make_net(1, /*unused=*/true);
    nn::DistributedDataParallel ddp(net);
    auto [x, y] = batch(0, R);
    REQUIRE_ERROR(net->loss(x, y).backward(),
                  "received no gradient in this backward: spare.bias, "
                  "spare.weight");
    // The reducer recovers: the next backward under no_sync works.
    auto guard = ddp.no_sync();
    net->loss(x, y).backward();
  }
  {
    auto net = make_net(1, true);
    nn::DDPOptions o;
    o.find_unused_parameters = true;
    nn::DistributedDataParallel ddp(net, o);
    auto [x, y] = batch(0, R);
    net->loss(x, y).backward();
    REQUIRE(net->spare->weight.grad().defined());
    REQUIRE(net->spare->weight.grad().abs().max().item<double>() == 0.0);
    REQUIRE(ddp.stats().launched_at_end >= 1);
    // head's gradient is the average over ranks.
    auto ref = make_net(1, true);
    std::vector<double> want;
    for (int k = 0; k < td::world_size(); ++k) {
      ref->zero_grad();
      auto [xk, yk] = batch(0, k);
      ref->loss(xk, yk).backward();
      auto g = ref->head->weight.grad().to_vector<double>();
      if (want.empty()) want.assign(g.size(), 0.0);
      for (size_t i = 0; i < g.size(); ++i) want[i] += g[i];
    }
    for (double& v : want) v /= td::world_size();
    REQUIRE(max_abs_diff(net->head->weight.grad().to_vector<double>(), want) <= 1e-15);
  }
}
