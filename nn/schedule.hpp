// nn/schedule.hpp — learning-rate schedulers with PyTorch's protocol: construction applies the
// schedule for step 0, step() advances one step and writes each group's options["lr"],
// get_last_lr() returns what was written. Every schedule is a closed form of the step count and
// each group's base lr (its lr when the scheduler was made), so a scheduler's whole state is
// last_epoch plus base_lrs.
//   StepLR                   lr = base · gamma^floor(step / step_size)
//   LambdaLR                 lr = base · fn(step)
//   CosineWithWarmupLR       HF get_cosine_schedule_with_warmup, decaying to min_lr_ratio · base
//   NoamLR                   base · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)
// Deliberately not here: the optimizers (nn/optim.hpp).
#pragma once

#include "nn/optim.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace tg::nn {

struct SchedulerState {
  int64_t last_epoch = 0;
  std::vector<double> base_lrs;
  std::vector<double> last_lrs;
};

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  void step();  // advances to the next step and sets every group's lr
  const std::vector<double>& get_last_lr() const { return last_lrs_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  SchedulerState state_dict() const { return {last_epoch_, base_lrs_, last_lrs_}; }
  void load_state_dict(const SchedulerState& s);  // also writes the loaded lrs into the groups

 protected:
  LRScheduler(Optimizer& opt, const char* name);
  void start();  // derived constructors call it: step 0
  virtual double factor_or_lr(double base_lr, int64_t step) const = 0;  // the lr at step

  Optimizer& opt_;
  const char* name_;

 private:
  int64_t last_epoch_ = -1;
  std::vector<double> base_lrs_, last_lrs_;
  void apply();
};

class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1);

 private:
  int64_t step_size_;
  double gamma_;
  double factor_or_lr(double base, int64_t step) const override;
};

class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& opt, std::function<double(int64_t step)> lr_lambda);

 protected:
  LambdaLR(Optimizer& opt, const char* name, std::function<double(int64_t)> fn);

 private:
  std::function<double(int64_t)> fn_;
  double factor_or_lr(double base, int64_t step) const override;
};

// nanoGPT's get_lr (linear warmup from (it + 1) / (warmup + 1), cosine to min_lr at
// lr_decay_iters, min_lr after) is a LambdaLR of the factor, with the optimizer's lr =
// learning_rate (tests/nn/test_schedule_clip.cpp checks these lines against nanoGPT's values):
//   nn::LambdaLR sched(opt, [=](int64_t it) {
//     if (it < warmup) return double(it + 1) / double(warmup + 1);
//     if (it > decay_iters) return min_lr / lr;
//     const double r = double(it - warmup) / double(decay_iters - warmup);
//     return (min_lr + 0.5 * (1 + std::cos(M_PI * r)) * (lr - min_lr)) / lr;
//   });
// factor = step / warmup during warmup; then 0.5·(1 + cos(π·progress)) with progress =
// (step - warmup) / (total - warmup) clamped to [0, 1] (HF leaves it unclamped and rises again
// after total); lr = base · (min_lr_ratio + (1 - min_lr_ratio) · factor).
class CosineWithWarmupLR : public LambdaLR {
 public:
  CosineWithWarmupLR(Optimizer& opt, int64_t warmup_steps, int64_t total_steps,
                     double min_lr_ratio = 0.0);
};

// The Annotated Transformer's rate(): step 0 counts as step 1 so the first lr is not zero.
class NoamLR : public LambdaLR {
 public:
  NoamLR(Optimizer& opt, int64_t d_model, int64_t warmup_steps);
};

}  // namespace tg::nn
