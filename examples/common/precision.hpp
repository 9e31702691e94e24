// examples/common/precision.hpp — the --precision option of the training programs (f32, bf16,
// f16) and what it changes in a training step: the forward and the loss run under
// tg::AutocastGuard (PyTorch's CPU autocast lists) in bf16 and f16, in training and in
// evaluation; parameters, gradients and optimizer state stay float32 (master weights, so
// checkpoints are float32 whatever the precision); f16 scales the loss with nn::GradScaler and
// skips a step whose gradients hold inf/NaN (counted); bf16 has float32's range and needs none.
// Checkpoints record the precision (and f16's loss scale); a run resumed in another precision
// than it was saved with continues, with one line saying so (the weights and optimizer state are
// the same float32 tensors whatever precision wrote them — PyTorch's autocast works the same).
// Deliberately not here: autocast itself (ops/autocast/autocast.hpp), the scaler (nn/amp.hpp),
// the examples' own non-finite loss checks (each names its step and checkpoint).
#pragma once

#include "common/cli.hpp"
#include "nn/amp.hpp"
#include "nn/checkpoint.hpp"
#include "ops/autocast/autocast.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tgx {

enum class Precision { kFloat32, kBFloat16, kFloat16 };

const char* precision_name(Precision p);  // "f32", "bf16", "f16"
// "f32" | "bf16" | "f16"; UserError "<what> fp8: unknown precision (allowed: f32, bf16, f16)".
Precision parse_precision(const std::string& s, const std::string& what = "--precision");
// Declares --precision (default f32) on a training program's parser.
ArgParser& precision_option(ArgParser& p);
Precision precision_of(const ArgParser& p);  // the parsed --precision

// The region in which a forward and its loss run in `p`: an AutocastGuard in bf16 and f16,
// nothing in f32.
class PrecisionScope {
 public:
  explicit PrecisionScope(Precision p);

 private:
  std::optional<tg::AutocastGuard> guard_;
};

// A training step's backward and optimizer step in a precision.
class MixedPrecision {
 public:
  explicit MixedPrecision(Precision p);
  Precision precision() const { return p_; }
  // opt.zero_grad(), backward of loss (scaled in f16), clipping of the unscaled gradients when
  // clip > 0, opt.step() — which f16's scaler skips when a gradient is inf or NaN. Returns false
  // for a skipped step (counted in skipped_steps()).
  bool backward_and_step(const tg::Tensor& loss, tg::nn::Optimizer& opt,
                         const std::vector<tg::Tensor>& params, double clip);
  int64_t skipped_steps() const { return skipped_; }
  // The line a run prints at its start in bf16 / f16 ("" in f32, whose output is unchanged).
  std::string describe() const;
  double loss_scale() const { return scaler_.get_scale(); }  // 1 unless f16
  // "precision", "precision.skipped_steps" and, in f16, "precision.scaler" (its state as JSON).
  tg::nn::Metadata metadata() const;
  // From a checkpoint's metadata: the skipped steps and, saved in f16 and resumed in f16, the
  // loss scale. Returns "" when the checkpoint was saved in this precision, else the line to print
  // ("<what> was saved by an f32 run; it continues in bf16 ..."); a checkpoint from before the
  // option counts as f32.
  std::string resume(const tg::nn::Metadata& m, const std::string& what);

 private:
  Precision p_;
  tg::nn::GradScaler scaler_;
  int64_t skipped_ = 0;
};

}  // namespace tgx
