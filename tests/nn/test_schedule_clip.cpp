// tests/nn/test_schedule_clip.cpp — LR schedulers and gradient clipping against PyTorch 1.13
// (tests/fixtures/nn_sched and nn_clip, from tools/make_nn_fixtures.py), scheduler state and
// argument errors.
#include "fixtures.hpp"
#include "helpers.hpp"

#include "nn/clip.hpp"
#include "nn/optim.hpp"
#include "nn/schedule.hpp"

#include <cmath>

using namespace tg;

namespace {
// tests/fixtures/<family>/<c>.safetensors: nn_sched/<schedule> holds "lr" (the sequence);
// nn_clip/inputs the gradients g0, g1 and nn_clip/<case> the results total, g0, g1.
Tensor fixture(const std::string& family, const std::string& c, const std::string& name) {
  return tgt::Fixture(family + "/" + c).tensor(name);
}

// get_last_lr()[0] after construction and after each of `steps` steps.
std::vector<double> lr_sequence(nn::LRScheduler& s, nn::Optimizer& opt, int steps) {
  std::vector<double> lrs{s.get_last_lr()[0]};
  for (int i = 0; i < steps; ++i) {
    s.step();
    REQUIRE(opt.param_groups()[0].lr() == s.get_last_lr()[0]);
    lrs.push_back(s.get_last_lr()[0]);
  }
  return lrs;
}
}  // namespace

TEST_CASE("LR schedulers match PyTorch", "[schedule][parity][nn_sched]") {
  Tensor p = zeros({1}).requires_grad_();
  {
    nn::SGD opt({p}, {0.1});
    nn::StepLR s(opt, 3, 0.5);
    tgt::require_close(tensor(lr_sequence(s, opt, 10)), fixture("nn_sched", "step", "lr"), 1e-15,
                       1e-13, "StepLR");
  }
  {
    nn::SGD opt({p}, {0.1});
    nn::CosineWithWarmupLR s(opt, 3, 10, 0.1);
    tgt::require_close(tensor(lr_sequence(s, opt, 12)), fixture("nn_sched", "cosine", "lr"), 1e-15,
                       1e-13, "cosine");
    REQUIRE(s.get_last_lr()[0] == Approx(0.01));  // stays at min after total
  }
  {
    nn::SGD opt({p}, {2.0});
    nn::NoamLR s(opt, 16, 4);
    tgt::require_close(tensor(lr_sequence(s, opt, 10)), fixture("nn_sched", "noam", "lr"), 1e-15,
                       1e-13, "Noam");
  }
}

TEST_CASE("schedulers drive every group from its own base lr - state round trip", "[schedule]") {
  Tensor a = zeros({1}).requires_grad_(), b = zeros({1}).requires_grad_();
  nn::SGD opt({nn::ParamGroup({a}), nn::ParamGroup({b}, {{"lr", 1.0}})}, {0.1});
  nn::LambdaLR s(opt, [](int64_t step) { return 1.0 / (step + 1); });
  s.step();
  s.step();
  REQUIRE(s.get_last_lr() == std::vector<double>{0.1 / 3, 1.0 / 3});
  nn::SchedulerState st = s.state_dict();
  REQUIRE(st.last_epoch == 2);
  REQUIRE(st.base_lrs == std::vector<double>{0.1, 1.0});

  nn::SGD opt2({nn::ParamGroup({a}), nn::ParamGroup({b}, {{"lr", 1.0}})}, {0.5});
  nn::LambdaLR s2(opt2, [](int64_t step) { return 1.0 / (step + 1); });
  s2.load_state_dict(st);
  REQUIRE(opt2.param_groups()[1].lr() == 1.0 / 3);
  s.step();
  s2.step();
  REQUIRE(s2.get_last_lr() == s.get_last_lr());

  nn::SGD one({a}, {0.1});
  REQUIRE_ERROR(nn::StepLR(one, 0), "StepLR: step_size must be positive, got 0");
  REQUIRE_ERROR(nn::CosineWithWarmupLR(one, 5, 3),
                "CosineWithWarmupLR: need 0 <= warmup_steps <= total_steps");
  REQUIRE_ERROR(nn::NoamLR(one, 0, 4),
                "NoamLR: d_model and warmup_steps must be positive, got 0 and 4");
  REQUIRE_ERROR(s2.load_state_dict({0, {0.1}, {}}),
                "LambdaLR.load_state_dict: state has 1 base lrs, optimizer has 2");
}

TEST_CASE("clip_grad_norm_ and clip_grad_value_ match PyTorch", "[clip][parity][nn_clip]") {
  auto params = [] {
    Tensor p0 = zeros({3, 4}, kFloat64).requires_grad_(),
           p1 = zeros({5}, kFloat64).requires_grad_();
    p0.set_grad(fixture("nn_clip", "inputs", "g0").clone());
    p1.set_grad(fixture("nn_clip", "inputs", "g1").clone());
    return std::vector<Tensor>{p0, p1};
  };
  struct Case {
    const char* name;
    double max_norm, norm_type;
  };
  for (Case c : {Case{"norm2", 1.0, 2.0}, Case{"norm3", 0.5, 3.0}, Case{"norminf", 0.7, INFINITY},
                 Case{"noclip", 100.0, 2.0}}) {
    INFO(c.name);
    std::vector<Tensor> ps = params();
    double total = nn::clip_grad_norm_(ps, c.max_norm, c.norm_type);
    std::string n = c.name;
    REQUIRE(total == Approx(fixture("nn_clip", n, "total").item<double>()).epsilon(1e-13));
    tgt::require_close(ps[0].grad(), fixture("nn_clip", n, "g0"), 1e-14, 1e-12, n);
    tgt::require_close(ps[1].grad(), fixture("nn_clip", n, "g1"), 1e-14, 1e-12, n);
  }
  std::vector<Tensor> ps = params();
  nn::clip_grad_value_(ps, 0.5);
  tgt::require_close(ps[0].grad(), fixture("nn_clip", "value", "g0"), 0, 0);
  tgt::require_close(ps[1].grad(), fixture("nn_clip", "value", "g1"), 0, 0);

  // No gradients: total 0. float32 gradients are clipped too.
  Tensor q = zeros({2}).requires_grad_();
  REQUIRE(nn::clip_grad_norm_({q}, 1.0) == 0.0);
  q.set_grad(tensor(std::vector<float>{3, 4}));
  REQUIRE(nn::clip_grad_norm_({q}, 1.0) == Approx(5.0));
  tgt::require_close(q.grad(), std::vector<double>{0.6, 0.8}, 1e-6, 1e-6);
  q.set_grad(tensor(std::vector<float>{NAN, 1}));
  REQUIRE_ERROR(nn::clip_grad_norm_({q}, 1.0, 2.0, true),
                "clip_grad_norm_: the total norm of order 2");
  REQUIRE_ERROR(nn::clip_grad_norm_({q}, 1.0, 0.0),
                "clip_grad_norm_: norm_type must be positive, got 0");
  REQUIRE_ERROR(nn::clip_grad_value_({q}, -1), "clip_grad_value_: clip_value must be >= 0, got -1");
}

TEST_CASE("clip_grad_norm_ and clip_grad_value_ read and write strided gradients in place",
          "[clip][views]") {
  // p0's gradient is a transposed view (strides (1, 3)) of `storage`, stored in .grad directly
  // (set_grad stores a row-major copy; the clipping must not rely on it); q0 the same values
  // row-major. Norms, results and the storage's layout agree.
  for (bool by_value : {false, true})
    for (double norm_type : {2.0, 3.0, double(INFINITY)}) {
      INFO((by_value ? "clip_grad_value_" : "clip_grad_norm_") << " norm_type " << norm_type);
      manual_seed(9);
      Tensor storage = randn({4, 3}, kFloat64), g1 = randn({5}, kFloat64);
      Tensor p0 = zeros({3, 4}, kFloat64).requires_grad_(),
             p1 = zeros({5}, kFloat64).requires_grad_();
      Tensor q0 = zeros({3, 4}, kFloat64).requires_grad_(),
             q1 = zeros({5}, kFloat64).requires_grad_();
      p0.impl()->grad = storage.t().impl_ptr();
      REQUIRE_FALSE(p0.grad().is_contiguous());
      q0.set_grad(storage.t().contiguous());
      p1.set_grad(g1);
      q1.set_grad(g1.clone());
      if (by_value) {
        nn::clip_grad_value_({p0, p1}, 0.5);
        nn::clip_grad_value_({q0, q1}, 0.5);
      } else {
        const double got = nn::clip_grad_norm_({p0, p1}, 0.3, norm_type);
        REQUIRE(got == nn::clip_grad_norm_({q0, q1}, 0.3, norm_type));
        REQUIRE(got > 0.3);  // clipping was active
      }
      REQUIRE(p0.grad().to_vector<double>() == q0.grad().to_vector<double>());
      REQUIRE(p1.grad().to_vector<double>() == q1.grad().to_vector<double>());
      REQUIRE(storage.to_vector<double>() == q0.grad().t().contiguous().to_vector<double>());
    }
}

TEST_CASE("clip_grad_norm_ refuses a negative or NaN max_norm (it would flip the gradients)",
          "[clip]") {
  Tensor q = zeros({2}).requires_grad_();
  q.set_grad(tensor(std::vector<float>{3, 4}));
  REQUIRE_ERROR(nn::clip_grad_norm_({q}, -1.0), "max_norm must be >= 0, got -1");
  REQUIRE_ERROR(nn::clip_grad_norm_({q}, NAN), "max_norm must be >= 0, got nan");
  tgt::require_close(q.grad(), std::vector<double>{3, 4}, 0, 0);  // untouched
  // max_norm 0 is PyTorch's: every gradient scaled to 0.
  REQUIRE(nn::clip_grad_norm_({q}, 0.0) == Approx(5.0));
  tgt::require_close(q.grad(), std::vector<double>{0, 0}, 0, 0);
}

TEST_CASE("LambdaLR gives nanoGPT's get_lr exactly (the lines nn/schedule.hpp documents)",
          "[schedule]") {
  Tensor p = zeros({1}).requires_grad_();
  const double lr = 6e-4, min_lr = 6e-5;
  const int64_t warmup = 10, decay_iters = 100;
  nn::AdamW opt({p}, {lr});
  nn::LambdaLR sched(opt, [=](int64_t it) {
    if (it < warmup) return double(it + 1) / double(warmup + 1);
    if (it > decay_iters) return min_lr / lr;
    const double r = double(it - warmup) / double(decay_iters - warmup);
    return (min_lr + 0.5 * (1 + std::cos(M_PI * r)) * (lr - min_lr)) / lr;
  });
  std::vector<double> got = lr_sequence(sched, opt, 502);
  // nanoGPT's train.py get_lr(it) with these settings, computed in Python
  const std::vector<std::pair<int, double>> want{{0, 5.454545454545454e-05},
                                                 {1, 0.00010909090909090908},
                                                 {9, 0.0005454545454545454},
                                                 {10, 0.0006},
                                                 {11, 0.0005998355232951559},
                                                 {55, 0.00032999999999999994},
                                                 {99, 6.0164476704844146e-05},
                                                 {100, 6e-05},
                                                 {101, 6e-05},
                                                 {500, 6e-05}};
  for (const auto& [it, v] : want) {
    INFO("iteration " << it);
    REQUIRE(std::abs(got[static_cast<size_t>(it)] - v) <= 1e-18);
  }
}
