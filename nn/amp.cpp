// nn/amp.cpp — nn::GradScaler: PyTorch's torch.cuda.amp.GradScaler (grad_scaler.py, and the
// kernels _amp_foreach_non_finite_check_and_unscale_ / _amp_update_scale_) over tensor ops, so it
// runs on every device and every floating gradient dtype. tests/nn/test_amp.cpp checks it against
// that algorithm run by PyTorch (tools/make_autocast_fixtures.py). Deliberately not here: the
// optimizers (nn/optim.cpp).
#include "nn/amp.hpp"

#include "autograd/tape.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <cmath>

namespace tg::nn {

namespace {
constexpr const char* kOp = "GradScaler";

void check_options(const GradScalerOptions& o) {
  if (!(o.init_scale > 0) || !std::isfinite(static_cast<float>(o.init_scale)))
    throw Error(
        fmt::format("{}: init_scale {} must be a positive finite float32", kOp, o.init_scale));
  if (!(o.growth_factor > 1))
    throw Error(fmt::format("{}: growth_factor {} must be > 1", kOp, o.growth_factor));
  if (!(o.backoff_factor > 0 && o.backoff_factor < 1))
    throw Error(fmt::format("{}: backoff_factor {} must be in (0, 1)", kOp, o.backoff_factor));
  if (o.growth_interval < 1)
    throw Error(fmt::format("{}: growth_interval {} must be >= 1", kOp, o.growth_interval));
}
}  // namespace

GradScaler::GradScaler(GradScalerOptions opts) : opts_(opts) {
  check_options(opts_);
  scale_ = static_cast<float>(opts_.init_scale);
}

Tensor GradScaler::scale(const Tensor& loss) const {
  if (!opts_.enabled) return loss;
  if (!loss.defined()) throw Error(fmt::format("{}.scale: the loss is undefined", kOp));
  if (!is_floating(loss.dtype()))
    throw Error(fmt::format("{}.scale: the loss {} is {}, not floating", kOp,
                            shape_str(loss.shape()), dtype_name(loss.dtype())));
  const Tensor l = is_reduced(loss.dtype()) ? loss.to(kFloat32) : loss;
  return mul(l, static_cast<double>(scale_));
}

void GradScaler::unscale_(Optimizer& optimizer) {
  if (!opts_.enabled) return;
  PerOptimizer& st = per_opt_[&optimizer];
  if (st.stage == Stage::Unscaled)
    throw Error(
        fmt::format("{}.unscale_: already called on this {} optimizer since the last "
                    "update()",
                    kOp, optimizer.name()));
  if (st.stage == Stage::Stepped)
    throw Error(
        fmt::format("{}.unscale_: called after step() on this {} optimizer; call "
                    "update() first",
                    kOp, optimizer.name()));
  // The float32 reciprocal, computed in float64 (PyTorch: _scale.double().reciprocal().float()).
  const float inv = static_cast<float>(1.0 / static_cast<double>(scale_));
  NoGradGuard ng;
  bool found = false;
  for (ParamGroup& group : optimizer.param_groups())
    for (const Tensor& p : group.params) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      found = found || !all(isfinite(g)).item<bool>();
      if (inv != 1.0f) g.mul_(static_cast<double>(inv));
    }
  st.found_inf = found;
  st.stage = Stage::Unscaled;
}

bool GradScaler::step(Optimizer& optimizer) {
  if (!opts_.enabled) {
    optimizer.step();
    return true;
  }
  PerOptimizer& st = per_opt_[&optimizer];
  if (st.stage == Stage::Stepped)
    throw Error(
        fmt::format("{}.step: already called on this {} optimizer since the last "
                    "update()",
                    kOp, optimizer.name()));
  if (st.stage == Stage::Ready) unscale_(optimizer);
  PerOptimizer& now = per_opt_[&optimizer];
  const bool stepped = !now.found_inf;
  if (stepped) optimizer.step();
  now.stage = Stage::Stepped;
  return stepped;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!opts_.enabled) return;
  if (new_scale) {
    if (!(*new_scale > 0) || !std::isfinite(static_cast<float>(*new_scale)))
      throw Error(fmt::format("{}.update: new_scale {} must be a positive finite float32", kOp,
                              *new_scale));
    scale_ = static_cast<float>(*new_scale);
  } else {
    if (per_opt_.empty())
      throw Error(
          fmt::format("{}.update: no inf checks were recorded (call unscale_ or step "
                      "on an optimizer first)",
                      kOp));
    bool found = false;
    for (const auto& [opt, st] : per_opt_) found = found || st.found_inf;
    if (found) {
      scale_ = static_cast<float>(scale_ * static_cast<float>(opts_.backoff_factor));
      tracker_ = 0;
    } else if (++tracker_ == opts_.growth_interval) {
      const float grown = static_cast<float>(scale_ * static_cast<float>(opts_.growth_factor));
      if (std::isfinite(grown)) scale_ = grown;
      tracker_ = 0;
    }
  }
  per_opt_.clear();
}

double GradScaler::get_scale() const { return opts_.enabled ? static_cast<double>(scale_) : 1.0; }

std::map<std::string, double> GradScaler::state_dict() const {
  if (!opts_.enabled) return {};
  return {{"scale", scale_},
          {"growth_factor", opts_.growth_factor},
          {"backoff_factor", opts_.backoff_factor},
          {"growth_interval", static_cast<double>(opts_.growth_interval)},
          {"_growth_tracker", static_cast<double>(tracker_)}};
}

void GradScaler::load_state_dict(const std::map<std::string, double>& state) {
  if (!opts_.enabled) return;
  if (state.empty())
    throw Error(
        fmt::format("{}.load_state_dict: the state dict is empty, possibly saved from a "
                    "disabled GradScaler",
                    kOp));
  for (const char* key :
       {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"})
    if (!state.count(key))
      throw Error(fmt::format("{}.load_state_dict: no \"{}\" in the state dict", kOp, key));
  GradScalerOptions o = opts_;
  o.init_scale = state.at("scale");
  o.growth_factor = state.at("growth_factor");
  o.backoff_factor = state.at("backoff_factor");
  o.growth_interval = static_cast<int64_t>(state.at("growth_interval"));
  check_options(o);
  opts_ = o;
  scale_ = static_cast<float>(o.init_scale);
  tracker_ = static_cast<int64_t>(state.at("_growth_tracker"));
}

}  // namespace tg::nn
