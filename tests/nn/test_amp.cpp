// tests/nn/test_amp.cpp — nn::GradScaler (nn/amp.hpp): PyTorch's defaults; skip-and-shrink on an
// injected inf, growth after growth_interval clean steps; a scripted sequence against PyTorch's
// algorithm (tests/fixtures/autocast/grad_scaler.safetensors: PyTorch 1.13's GradScaler is CUDA
// only, so tools/make_autocast_fixtures.py runs its algorithm with torch ops on the CPU); the
// once-per-step rules, state_dict round trips, and the disabled pass-through. float32 gradients
// throughout (the master weights autocast trains). A float16 autocast run with the scaler against
// the float32 run (the matmul and loss families in float16; tagged [families]).
#include "fixtures.hpp"
#include "helpers.hpp"

#include "nn/amp.hpp"
#include "nn/optim.hpp"
#include "ops/autocast/autocast.hpp"

#include <cmath>
#include <limits>

using namespace tg;
using nn::GradScaler;
using nn::GradScalerOptions;

namespace {

// A loss of w whose gradient is finite; poison puts `bad` into one gradient element afterwards.
Tensor quad_loss(const Tensor& w) { return (w * w).sum() * 0.5f; }
void poison(const Tensor& w, float bad) { w.grad().data<float>()[1] = bad; }

GradScalerOptions small_interval() {
  GradScalerOptions o;
  o.init_scale = 1024;
  o.growth_interval = 3;
  return o;
}

}  // namespace

TEST_CASE("GradScaler: PyTorch's defaults and state_dict keys", "[amp]") {
  GradScaler s;
  REQUIRE(s.get_scale() == 65536.0);
  REQUIRE(s.get_growth_factor() == 2.0);
  REQUIRE(s.get_backoff_factor() == 0.5);
  REQUIRE(s.get_growth_interval() == 2000);
  REQUIRE(s.is_enabled());
  const auto sd = s.state_dict();
  REQUIRE(sd.at("scale") == 65536.0);
  REQUIRE(sd.at("_growth_tracker") == 0.0);
  REQUIRE(sd.size() == 5);
}

TEST_CASE("GradScaler: an inf gradient skips the step and halves the scale, clean steps grow it",
          "[amp]") {
  Tensor w = tensor(std::vector<float>{1, 2, 3}).requires_grad_();
  nn::SGD opt({w}, {/*lr=*/0.5});
  GradScaler s(small_interval());
  // scaled backward: the gradient is w · scale, unscale_ brings it back to w
  s.scale(quad_loss(w)).backward();
  REQUIRE(w.grad().to_vector<double>() == std::vector<double>{1024, 2048, 3072});
  poison(w, std::numeric_limits<float>::infinity());
  REQUIRE_FALSE(s.step(opt));
  REQUIRE(w.to_vector<double>() == std::vector<double>{1, 2, 3});  // unchanged
  s.update();
  REQUIRE(s.get_scale() == 512.0);
  REQUIRE(s.growth_tracker() == 0);
  // three clean steps: the third grows the scale back
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    s.scale(quad_loss(w)).backward();
    s.unscale_(opt);
    if (i == 0) REQUIRE(w.grad().to_vector<double>() == std::vector<double>{1, 2, 3});
    REQUIRE(s.step(opt));
    s.update();
    REQUIRE(s.get_scale() == (i < 2 ? 512.0 : 1024.0));
    REQUIRE(s.growth_tracker() == (i < 2 ? i + 1 : 0));
  }
  REQUIRE(w.to_vector<double>() == std::vector<double>{0.125, 0.25, 0.375});  // w·(1/2)³
  // a NaN skips too and resets the count
  opt.zero_grad();
  s.scale(quad_loss(w)).backward();
  poison(w, std::numeric_limits<float>::quiet_NaN());
  REQUIRE_FALSE(s.step(opt));
  s.update();
  REQUIRE(s.get_scale() == 512.0);
}

TEST_CASE("GradScaler: a scripted sequence follows PyTorch's GradScaler algorithm", "[amp]") {
  tgt::Fixture f("autocast/grad_scaler");
  Tensor w = f.tensor("weight0").requires_grad_(), b = f.tensor("bias0").requires_grad_();
  nn::SGD opt({w, b}, {std::stod(f.meta("lr"))});
  GradScalerOptions o;
  o.init_scale = std::stod(f.meta("init_scale"));
  o.growth_factor = std::stod(f.meta("growth_factor"));
  o.backoff_factor = std::stod(f.meta("backoff_factor"));
  o.growth_interval = std::stoll(f.meta("growth_interval"));
  GradScaler s(o);
  std::map<int64_t, float> inject;
  for (const std::string& e : f.meta_list("inject")) {
    const size_t c = e.find(':');
    inject[std::stoll(e.substr(0, c))] = std::stof(e.substr(c + 1));
  }
  const Tensor xs = f.tensor("x"), ys = f.tensor("y");
  const auto want_loss = f.tensor("loss").to_vector<double>();
  const auto want_scale = f.tensor("scale").to_vector<double>();
  const auto want_inf = f.tensor("found_inf").to_vector<double>();
  for (int64_t i = 0; i < xs.size(0); ++i) {
    INFO("step " << i);
    opt.zero_grad();
    Tensor loss = mse_loss(linear(xs.select(0, i), w, b), ys.select(0, i));
    s.scale(loss).backward();
    if (inject.count(i)) w.grad().data<float>()[1 * 4 + 2] = inject[i];
    const bool stepped = s.step(opt);
    s.update();
    REQUIRE(loss.item<double>() == Approx(want_loss[i]).epsilon(1e-5));
    REQUIRE(stepped == (want_inf[i] == 0));
    REQUIRE(s.get_scale() == want_scale[i]);
  }
  tgt::require_close(w, f.tensor("weight").to(kFloat64).to_vector<double>(), 1e-5);
  tgt::require_close(b, f.tensor("bias").to(kFloat64).to_vector<double>(), 1e-5);
}

TEST_CASE("GradScaler: unscale_ and step once per optimizer between updates", "[amp]") {
  Tensor w = tensor(std::vector<float>{1, 2}).requires_grad_();
  nn::SGD opt({w}, {0.1});
  GradScaler s;
  REQUIRE_THROWS_WITH(s.update(),
                      "GradScaler.update: no inf checks were recorded (call unscale_ "
                      "or step on an optimizer first)");
  s.scale(quad_loss(w)).backward();
  s.unscale_(opt);
  REQUIRE_THROWS_WITH(s.unscale_(opt),
                      "GradScaler.unscale_: already called on this SGD optimizer since the last "
                      "update()");
  REQUIRE(s.step(opt));  // unscaled already: steps without unscaling twice
  tgt::require_close(w, {0.9, 1.8}, 1e-6);
  REQUIRE_THROWS_WITH(s.step(opt),
                      "GradScaler.step: already called on this SGD optimizer since the last "
                      "update()");
  REQUIRE_THROWS_WITH(s.unscale_(opt),
                      "GradScaler.unscale_: called after step() on this SGD "
                      "optimizer; call update() first");
  s.update();
  s.update(4.0);
  REQUIRE(s.get_scale() == 4.0);
}

TEST_CASE("GradScaler: state_dict round trip, option checks, the disabled pass-through", "[amp]") {
  GradScaler a(small_interval());
  Tensor w = tensor(std::vector<float>{1}).requires_grad_();
  nn::SGD opt({w}, {0.1});
  a.scale(quad_loss(w)).backward();
  a.step(opt);
  a.update();
  GradScaler b;
  b.load_state_dict(a.state_dict());
  REQUIRE(b.state_dict() == a.state_dict());
  REQUIRE(b.growth_tracker() == 1);
  REQUIRE(b.get_growth_interval() == 3);
  REQUIRE_THROWS_WITH(b.load_state_dict({}),
                      "GradScaler.load_state_dict: the state dict is "
                      "empty, possibly saved from a disabled GradScaler");
  GradScalerOptions bad;
  bad.growth_factor = 1.0;
  REQUIRE_THROWS_WITH(GradScaler(bad), "GradScaler: growth_factor 1 must be > 1");
  bad = {};
  bad.backoff_factor = 1.5;
  REQUIRE_THROWS_WITH(GradScaler(bad), "GradScaler: backoff_factor 1.5 must be in (0, 1)");
  // a reduced-precision loss is scaled in float32
  const Tensor l16 = tensor(std::vector<float>{3}).to(kFloat16);
  REQUIRE(a.scale(l16).dtype() == kFloat32);
  REQUIRE(a.scale(l16).item<double>() == 3 * a.get_scale());
  GradScalerOptions off;
  off.enabled = false;
  GradScaler d(off);
  const Tensor l = quad_loss(w);
  REQUIRE(d.scale(l).same(l));
  REQUIRE(d.get_scale() == 1.0);
  REQUIRE(d.state_dict().empty());
  // steps whatever the gradients hold
  Tensor v = tensor(std::vector<float>{1, 2}).requires_grad_();
  nn::SGD o2({v}, {0.1});
  quad_loss(v).backward();
  poison(v, std::numeric_limits<float>::infinity());
  REQUIRE(d.step(o2));
  d.update();
  REQUIRE(v.to_vector<double>()[1] == -std::numeric_limits<double>::infinity());
}

TEST_CASE("GradScaler: float16 autocast training with a scaler follows the float32 run",
          "[autocast][families]") {
  // y = x·Wᵀ + b fitted by SGD, once in float32 and once under float16 autocast with a scaler whose
  // scale keeps the float16 weight gradients finite: every step runs, and the losses agree to
  // float16 rounding.
  manual_seed(7);
  const Tensor x = randn({32, 8}), wt = randn({4, 8}), y = matmul(x, wt.t());
  std::vector<double> losses[2];
  for (int run = 0; run < 2; ++run) {
    manual_seed(8);
    Tensor w = (randn({4, 8}) * 0.1).detach().requires_grad_(), b = zeros({4}).requires_grad_();
    nn::SGD opt({w, b}, {0.3});
    GradScalerOptions so;
    so.init_scale = 1024;
    GradScaler s(so);
    for (int step = 0; step < 10; ++step) {
      opt.zero_grad();
      Tensor loss;
      {
        AutocastGuard g(kFloat16, /*enabled=*/run == 1);
        loss = mse_loss(linear(x, w, b), y);
      }
      REQUIRE(loss.dtype() == kFloat32);
      s.scale(loss).backward();
      REQUIRE(w.grad().dtype() == kFloat32);
      REQUIRE(s.step(opt));
      s.update();
      losses[run].push_back(loss.item<double>());
    }
    REQUIRE(s.get_scale() == 1024.0);
  }
  REQUIRE(losses[0].back() < 0.5 * losses[0].front());
  tgt::require_near(losses[1], losses[0], 1e-2, 1e-3, "float16 autocast against float32");
}
