// nn/optim.hpp — optimizers over parameter groups with PyTorch 1.13's update rules: SGD
// (momentum, dampening, nesterov, weight decay), Adam (L2 weight decay, amsgrad) and AdamW
// (decoupled weight decay). Updates run in place on the parameters' storage, outside the tape.
//
// Hyperparameters live in each group's `options`, a name -> number map like PyTorch's
// param_groups dicts ("lr", "weight_decay", "momentum", "beta1", ...; booleans are 0/1). A group
// gives only what it overrides; the optimizer fills the rest from its defaults and rejects
// unknown names. Schedulers change options["lr"].
//
//   nn::AdamW opt({nn::ParamGroup(decay), nn::ParamGroup(no_decay, {{"weight_decay", 0.0}})},
//                 {/*lr=*/3e-4});
//
// Per-parameter state (exp_avg, step, ...) is a ParamState: named tensors and numbers.
// state_dict() gives a plain OptimizerState that names parameters by their position across
// groups (PyTorch's convention), so it can be saved and loaded into a fresh optimizer.
// Deliberately not here: LR schedules (nn/schedule.hpp), gradient clipping (nn/clip.hpp).
#pragma once

#include "autograd/tensor.hpp"
#include "ops/optim/entries.hpp"  // AdamScalars

#include <array>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace tg::nn {

using Options = std::map<std::string, double>;

struct ParamGroup {
  std::vector<Tensor> params;
  Options options;  // overrides at construction; every hyperparameter once added to an optimizer
  ParamGroup(std::vector<Tensor> params, Options options = {})
      : params(std::move(params)), options(std::move(options)) {}
  double get(const std::string& key) const;  // throws naming the key
  double lr() const { return get("lr"); }
  void set_lr(double lr) { options["lr"] = lr; }
};

struct ParamState {
  std::map<std::string, Tensor> tensors;  // each of the parameter's shape and dtype
  std::map<std::string, double> numbers;  // e.g. "step"
};

struct OptimizerState {
  std::string optimizer;  // "SGD", "Adam", "AdamW"
  struct Group {
    Options options;
    std::vector<int64_t> params;  // indices across groups, in order
  };
  std::vector<Group> param_groups;
  std::map<int64_t, ParamState> state;  // by parameter index; parameters never stepped have none
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual void step() = 0;
  void zero_grad(bool set_to_none = true);
  void add_param_group(ParamGroup group);
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  const Options& defaults() const { return defaults_; }
  const std::string& name() const { return name_; }
  // The state of one parameter (empty until its first step).
  ParamState& state(const Tensor& param) { return state_[param.impl()]; }

  OptimizerState state_dict() const;  // tensors are clones
  // Checks the optimizer kind, group and parameter counts and every state tensor's shape; then
  // replaces state and hyperparameters (tensors converted to the parameter's dtype).
  void load_state_dict(const OptimizerState& s);

 protected:
  Optimizer(std::string name, Options defaults)
      : name_(std::move(name)), defaults_(std::move(defaults)) {}
  // Validates the defaults and adds the groups (derived constructors call it).
  void init_groups(const std::vector<ParamGroup>& groups);
  void validate(const Options& o) const;  // unknown names, and validate_values
  virtual void validate_values(const Options& o) const = 0;
  // The gradient of p checked against it, or undefined when p has none.
  Tensor grad_of(const Tensor& p) const;

  std::string name_;
  Options defaults_;
  std::vector<ParamGroup> groups_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
};

// ---- SGD --------------------------------------------------------------------------------------
// g = grad + wd·p;  b = g at the first step, else momentum·b + (1 - dampening)·g;
// g = g + momentum·b with nesterov, else b (when momentum != 0);  p -= lr·g.
struct SGDOptions {
  double lr = 1e-2;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
};
class SGD : public Optimizer {
 public:
  SGD(const std::vector<Tensor>& params, SGDOptions opts = {});
  SGD(const std::vector<ParamGroup>& groups, SGDOptions opts = {});
  void step() override;

 private:
  void validate_values(const Options& o) const override;
};

// ---- Adam / AdamW -------------------------------------------------------------------------------
// m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²;  v̂ = max(v̂, v) with amsgrad;
// p -= lr/(1-β1^t) · m / (sqrt(v or v̂)/sqrt(1-β2^t) + eps).
// Adam adds wd·p to g (L2); AdamW multiplies p by (1 - lr·wd) first (decoupled). Options as in
// PyTorch: AdamWOptions o(3e-4); o.betas = {0.9, 0.95}; or AdamOptions{1e-3, {0.9, 0.99}}. In a
// parameter group's dict (numbers only) the two betas are the keys "beta1" and "beta2".
struct AdamOptions {
  double lr = 1e-3;
  std::array<double, 2> betas = {0.9, 0.999};  // (β1, β2), PyTorch's `betas`
  double eps = 1e-8;
  double weight_decay = 0;  // AdamW's default is 1e-2 (AdamWOptions)
  bool amsgrad = false;
  bool maximize = false;
};
struct AdamWOptions : AdamOptions {
  AdamWOptions() { weight_decay = 1e-2; }
  AdamWOptions(double lr_) : AdamWOptions() { lr = lr_; }
};
class Adam : public Optimizer {
 public:
  Adam(const std::vector<Tensor>& params, AdamOptions opts = {});
  Adam(const std::vector<ParamGroup>& groups, AdamOptions opts = {});
  void step() override;

 protected:
  Adam(const char* name, const std::vector<ParamGroup>& groups, const AdamOptions& opts,
       bool decoupled);

 private:
  bool decoupled_ = false;
  void validate_values(const Options& o) const override;
};
class AdamW : public Adam {
 public:
  AdamW(const std::vector<Tensor>& params, AdamWOptions opts = AdamWOptions());
  AdamW(const std::vector<ParamGroup>& groups, AdamWOptions opts = AdamWOptions());
};

// ---- the Adam scalars (ZeroRedundancyAdamW in nn/zero.cpp steps shards with them) ----
namespace detail {
// The scalars of one step of ops' fused Adam / AdamW (tg::detail::adam_step_,
// ops/optim/entries.hpp).
using AdamScalars = tg::detail::AdamScalars;
// From a group's options at step `step` (1-based).
AdamScalars adam_scalars(const Options& o, double step, bool decoupled);
}  // namespace detail

}  // namespace tg::nn
