// nn/schedule.cpp — the LR schedulers of schedule.hpp.
#include "nn/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tg::nn {

LRScheduler::LRScheduler(Optimizer& opt, const char* name) : opt_(opt), name_(name) {
  for (const ParamGroup& g : opt.param_groups()) base_lrs_.push_back(g.lr());
}
void LRScheduler::start() {
  last_epoch_ = 0;
  apply();
}
void LRScheduler::step() {
  ++last_epoch_;
  apply();
}
void LRScheduler::apply() {
  auto& groups = opt_.param_groups();
  if (groups.size() != base_lrs_.size())
    throw Error(fmt::format("{}: optimizer has {} parameter groups, scheduler was made for {}",
                            name_, groups.size(), base_lrs_.size()));
  last_lrs_.clear();
  for (size_t i = 0; i < groups.size(); ++i) {
    double lr = factor_or_lr(base_lrs_[i], last_epoch_);
    groups[i].set_lr(lr);
    last_lrs_.push_back(lr);
  }
}
void LRScheduler::load_state_dict(const SchedulerState& s) {
  if (s.base_lrs.size() != opt_.param_groups().size())
    throw Error(
        fmt::format("{}.load_state_dict: state has {} base lrs, optimizer has {} parameter groups",
                    name_, s.base_lrs.size(), opt_.param_groups().size()));
  last_epoch_ = s.last_epoch;
  base_lrs_ = s.base_lrs;
  apply();
}

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma)
    : LRScheduler(opt, "StepLR"), step_size_(step_size), gamma_(gamma) {
  if (step_size <= 0)
    throw Error(fmt::format("StepLR: step_size must be positive, got {}", step_size));
  start();
}
double StepLR::factor_or_lr(double base, int64_t step) const {
  return base * std::pow(gamma_, static_cast<double>(step / step_size_));
}

LambdaLR::LambdaLR(Optimizer& opt, std::function<double(int64_t)> fn)
    : LambdaLR(opt, "LambdaLR", std::move(fn)) {}
LambdaLR::LambdaLR(Optimizer& opt, const char* name, std::function<double(int64_t)> fn)
    : LRScheduler(opt, name), fn_(std::move(fn)) {
  if (!fn_) throw Error(fmt::format("{}: lr_lambda is empty", name));
  start();
}
double LambdaLR::factor_or_lr(double base, int64_t step) const { return base * fn_(step); }

namespace {
std::function<double(int64_t)> cosine_fn(int64_t warmup, int64_t total, double min_ratio) {
  if (warmup < 0 || total <= 0 || warmup > total || !(min_ratio >= 0 && min_ratio <= 1))
    throw Error(fmt::format(
        "CosineWithWarmupLR: need 0 <= warmup_steps <= total_steps, total_steps > 0 and "
        "min_lr_ratio in [0, 1], got warmup {}, total {}, min_lr_ratio {}",
        warmup, total, min_ratio));
  return [=](int64_t step) {
    if (step < warmup)
      return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup));
    double progress = static_cast<double>(step - warmup) /
                      static_cast<double>(std::max<int64_t>(1, total - warmup));
    progress = std::min(1.0, progress);
    double f = 0.5 * (1.0 + std::cos(M_PI * progress));
    return min_ratio + (1.0 - min_ratio) * f;
  };
}
std::function<double(int64_t)> noam_fn(int64_t d_model, int64_t warmup) {
  if (d_model <= 0 || warmup <= 0)
    throw Error(fmt::format("NoamLR: d_model and warmup_steps must be positive, got {} and {}",
                            d_model, warmup));
  return [=](int64_t step) {
    double s = static_cast<double>(std::max<int64_t>(step, 1));
    return std::pow(static_cast<double>(d_model), -0.5) *
           std::min(std::pow(s, -0.5), s * std::pow(static_cast<double>(warmup), -1.5));
  };
}
}  // namespace

CosineWithWarmupLR::CosineWithWarmupLR(Optimizer& opt, int64_t warmup, int64_t total,
                                       double min_ratio)
    : LambdaLR(opt, "CosineWithWarmupLR", cosine_fn(warmup, total, min_ratio)) {}
NoamLR::NoamLR(Optimizer& opt, int64_t d_model, int64_t warmup)
    : LambdaLR(opt, "NoamLR", noam_fn(d_model, warmup)) {}

}  // namespace tg::nn
