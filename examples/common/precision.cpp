// examples/common/precision.cpp — --precision, the autocast region and the mixed-precision step.
// See precision.hpp.
#include "common/precision.hpp"

#include "nn/clip.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tgx {
namespace {

constexpr Precision kAll[] = {Precision::kFloat32, Precision::kBFloat16, Precision::kFloat16};

tg::nn::GradScalerOptions scaler_options(Precision p) {
  tg::nn::GradScalerOptions o;  // PyTorch's defaults
  o.enabled = p == Precision::kFloat16;
  return o;
}

}  // namespace

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kBFloat16:
      return "bf16";
    case Precision::kFloat16:
      return "f16";
    default:
      return "f32";
  }
}

Precision parse_precision(const std::string& s, const std::string& what) {
  for (Precision p : kAll)
    if (s == precision_name(p)) return p;
  throw UserError(fmt::format("{} {}: unknown precision (allowed: f32, bf16, f16)", what, s));
}

ArgParser& precision_option(ArgParser& p) {
  return p.option("precision", "f32",
                  "f32, bf16 or f16: forward and loss under autocast in bf16/f16 (float32 master "
                  "weights and optimizer state; f16 with dynamic loss scaling)");
}

Precision precision_of(const ArgParser& p) { return parse_precision(p.str("precision")); }

PrecisionScope::PrecisionScope(Precision p) {
  if (p == Precision::kBFloat16) guard_.emplace(tg::kBFloat16);
  if (p == Precision::kFloat16) guard_.emplace(tg::kFloat16);
}

MixedPrecision::MixedPrecision(Precision p) : p_(p), scaler_(scaler_options(p)) {}

bool MixedPrecision::backward_and_step(const tg::Tensor& loss, tg::nn::Optimizer& opt,
                                       const std::vector<tg::Tensor>& params, double clip) {
  opt.zero_grad();
  if (!scaler_.is_enabled()) {  // f32 and bf16: the plain step
    loss.backward();
    if (clip > 0) tg::nn::clip_grad_norm_(params, clip);
    opt.step();
    return true;
  }
  scaler_.scale(loss).backward();
  scaler_.unscale_(opt);  // clipping reads the true gradients
  if (clip > 0) tg::nn::clip_grad_norm_(params, clip);
  const bool stepped = scaler_.step(opt);
  scaler_.update();
  skipped_ += stepped ? 0 : 1;
  return stepped;
}

std::string MixedPrecision::describe() const {
  if (p_ == Precision::kFloat32) return "";
  return fmt::format(
      "precision {}: forward and loss under autocast, float32 master weights and optimizer "
      "state{}",
      precision_name(p_),
      scaler_.is_enabled() ? fmt::format(", dynamic loss scaling from {}", scaler_.get_scale())
                           : "");
}

tg::nn::Metadata MixedPrecision::metadata() const {
  tg::nn::Metadata m = {{"precision", precision_name(p_)},
                        {"precision.skipped_steps", std::to_string(skipped_)}};
  if (scaler_.is_enabled()) m["precision.scaler"] = nlohmann::json(scaler_.state_dict()).dump();
  return m;
}

std::string MixedPrecision::resume(const tg::nn::Metadata& m, const std::string& what) {
  auto it = m.find("precision");
  const Precision saved = it == m.end() ? Precision::kFloat32 : parse_precision(it->second, what);
  auto sk = m.find("precision.skipped_steps");
  skipped_ = sk == m.end() ? 0 : parse_int(sk->second).value_or(0);
  auto sc = m.find("precision.scaler");
  if (saved == p_ && scaler_.is_enabled() && sc != m.end()) {
    nlohmann::json j = nlohmann::json::parse(sc->second, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw UserError(fmt::format("{}: malformed precision.scaler metadata", what));
    scaler_.load_state_dict(j.get<std::map<std::string, double>>());
  }
  if (saved == p_) return "";
  return fmt::format(
      "{} was saved by a {} run; it continues in {} (checkpoints hold float32 master weights and "
      "optimizer state whatever the precision{})",
      what, precision_name(saved), precision_name(p_),
      p_ == Precision::kFloat16 ? "; f16's loss scale starts at its default" : "");
}

}  // namespace tgx
