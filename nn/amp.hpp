// nn/amp.hpp — dynamic loss scaling for float16 training: nn::GradScaler, PyTorch's
// torch.cuda.amp.GradScaler (its semantics and defaults) on any device. A float16 gradient
// underflows where a float32 one would not; scaling the loss by S before backward moves the
// gradients up by S, and unscale_ divides them again before the optimizer reads them:
//
//   nn::GradScaler scaler;                       // init_scale 65536, growth 2, backoff 0.5, 2000
//   { tg::AutocastGuard guard(tg::kFloat16);  loss = model_loss(batch); }
//   scaler.scale(loss).backward();
//   scaler.unscale_(opt);  nn::clip_grad_norm_(params, 1.0);   // optional: clip unscaled grads
//   scaler.step(opt);                            // skipped when a gradient is inf or NaN
//   scaler.update();                             // halves S after a skip; doubles it after
//                                                // growth_interval clean steps in a row
//
// The scale is kept as a float32 number (PyTorch's _scale), unscaling multiplies by its float32
// reciprocal computed in float64, and a grown scale that would overflow float32 is not taken
// (_amp_update_scale_). bfloat16 has float32's range and needs no scaler (enabled=false makes every
// call a pass-through). Deliberately not here: autocast (ops/autocast/autocast.hpp), clipping
// (nn/clip.hpp).
#pragma once

#include "autograd/tensor.hpp"
#include "nn/optim.hpp"

#include <map>
#include <optional>
#include <string>
#include <unordered_map>

namespace tg::nn {

struct GradScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;   // > 1
  double backoff_factor = 0.5;  // in (0, 1)
  int64_t growth_interval = 2000;
  bool enabled = true;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions opts = {});

  // loss · scale, in float32 for a bfloat16/float16 loss (PyTorch's product with its float32
  // scale tensor); the loss itself when disabled.
  Tensor scale(const Tensor& loss) const;
  // Divides the gradients of the optimizer's parameters by the scale in place and records whether
  // any was inf or NaN. At most once per optimizer between update()s.
  void unscale_(Optimizer& optimizer);
  // unscale_ (when not done yet), then optimizer.step() unless a gradient was inf/NaN. Returns
  // whether the optimizer stepped. Once per optimizer between update()s.
  bool step(Optimizer& optimizer);
  // Backs off after any skipped step, else counts a clean step and grows the scale every
  // growth_interval of them; with new_scale, sets the scale instead. Ends the iteration.
  void update(std::optional<double> new_scale = std::nullopt);

  double get_scale() const;  // 1 when disabled
  double get_growth_factor() const { return opts_.growth_factor; }
  double get_backoff_factor() const { return opts_.backoff_factor; }
  int64_t get_growth_interval() const { return opts_.growth_interval; }
  int64_t growth_tracker() const { return tracker_; }  // clean steps since the last change
  bool is_enabled() const { return opts_.enabled; }

  // PyTorch's keys: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker
  // (empty when disabled). load_state_dict refuses an empty or incomplete dict.
  std::map<std::string, double> state_dict() const;
  void load_state_dict(const std::map<std::string, double>& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    bool found_inf = false;
  };
  GradScalerOptions opts_;
  float scale_;
  int64_t tracker_ = 0;
  std::unordered_map<const Optimizer*, PerOptimizer> per_opt_;
};

}  // namespace tg::nn
