// nn/optim.cpp — the Optimizer base (groups, state dicts) and the SGD / Adam / AdamW update
// loops, written in the operation order of PyTorch 1.13's _single_tensor_* functions.
#include "nn/optim.hpp"

#include "autograd/tape.hpp"
#include "ops/optim/entries.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_set>

namespace tg::nn {

// ---- groups and the base ------------------------------------------------------------------------

double ParamGroup::get(const std::string& key) const {
  auto it = options.find(key);
  if (it == options.end()) throw Error(fmt::format("ParamGroup: no option \"{}\"", key));
  return it->second;
}

void Optimizer::init_groups(const std::vector<ParamGroup>& groups) {
  validate(defaults_);
  if (groups.empty()) throw Error(fmt::format("{}: optimizer got an empty parameter list", name_));
  for (const ParamGroup& g : groups) add_param_group(g);
}

void Optimizer::validate(const Options& o) const {
  for (const auto& [k, v] : o)
    if (!defaults_.count(k))
      throw Error(fmt::format("{}: unknown option \"{}\" in a parameter group", name_, k));
  validate_values(o);
}

void Optimizer::add_param_group(ParamGroup group) {
  size_t gi = groups_.size();
  if (group.params.empty()) throw Error(fmt::format("{}: parameter group {} is empty", name_, gi));
  for (const auto& [k, v] : defaults_) group.options.emplace(k, v);
  validate(group.options);
  std::unordered_set<const TensorImpl*> seen;
  for (const ParamGroup& g : groups_)
    for (const Tensor& p : g.params) seen.insert(p.impl());
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    if (!p.defined() || !p.requires_grad() || !p.is_leaf())
      throw Error(fmt::format(
          "{}: parameter {} of group {} must be a leaf tensor that requires grad", name_, i, gi));
    if (!seen.insert(p.impl()).second)
      throw Error(fmt::format("{}: parameter {} of group {} {} appears in more than one place",
                              name_, i, gi, shape_str(p.shape())));
  }
  groups_.push_back(std::move(group));
}

void Optimizer::zero_grad(bool set_to_none) {
  for (ParamGroup& g : groups_)
    for (Tensor& p : g.params) set_to_none ? p.reset_grad() : p.zero_grad();
}

Tensor Optimizer::grad_of(const Tensor& p) const {
  Tensor g = p.grad();
  // a bfloat16 / float16 gradient of float32 master weights is read as it is (Adam) or converted
  const bool mixed = g.defined() && is_reduced(g.dtype()) && p.dtype() == kFloat32;
  if (g.defined() && (g.shape() != p.shape() || (g.dtype() != p.dtype() && !mixed)))
    throw Error(fmt::format("{}: gradient {} {} does not match parameter {} {}", name_,
                            shape_str(g.shape()), dtype_name(g.dtype()), shape_str(p.shape()),
                            dtype_name(p.dtype())));
  return g;
}

OptimizerState Optimizer::state_dict() const {
  OptimizerState s;
  s.optimizer = name_;
  int64_t index = 0;
  for (const ParamGroup& g : groups_) {
    OptimizerState::Group sg{g.options, {}};
    for (const Tensor& p : g.params) {
      sg.params.push_back(index);
      auto it = state_.find(p.impl());
      if (it != state_.end()) {
        ParamState ps;
        ps.numbers = it->second.numbers;
        for (const auto& [k, t] : it->second.tensors) ps.tensors[k] = t.clone();
        s.state[index] = std::move(ps);
      }
      ++index;
    }
    s.param_groups.push_back(std::move(sg));
  }
  return s;
}

void Optimizer::load_state_dict(const OptimizerState& s) {
  if (s.optimizer != name_)
    throw Error(fmt::format("{}.load_state_dict: state is for a {} optimizer", name_, s.optimizer));
  if (s.param_groups.size() != groups_.size())
    throw Error(fmt::format("{}.load_state_dict: state has {} parameter groups, optimizer has {}",
                            name_, s.param_groups.size(), groups_.size()));
  std::vector<const Tensor*> by_index;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    if (s.param_groups[gi].params.size() != groups_[gi].params.size())
      throw Error(fmt::format(
          "{}.load_state_dict: group {} has {} parameters in the state, {} in the optimizer", name_,
          gi, s.param_groups[gi].params.size(), groups_[gi].params.size()));
    validate(s.param_groups[gi].options);
    for (const Tensor& p : groups_[gi].params) by_index.push_back(&p);
  }
  for (const auto& [index, ps] : s.state) {
    if (index < 0 || index >= static_cast<int64_t>(by_index.size()))
      throw Error(fmt::format("{}.load_state_dict: state for parameter {} but the optimizer has {}",
                              name_, index, by_index.size()));
    const Tensor& p = *by_index[static_cast<size_t>(index)];
    for (const auto& [k, t] : ps.tensors)
      if (!t.defined() || t.shape() != p.shape())
        throw Error(fmt::format(
            "{}.load_state_dict: state \"{}\" of parameter {} is {}, parameter is {}", name_, k,
            index, t.defined() ? shape_str(t.shape()) : "undefined", shape_str(p.shape())));
  }
  state_.clear();
  for (const auto& [index, ps] : s.state) {
    const Tensor& p = *by_index[static_cast<size_t>(index)];
    ParamState& dst = state_[p.impl()];
    dst.numbers = ps.numbers;
    for (const auto& [k, t] : ps.tensors)
      dst.tensors[k] = t.detach().to(p.dtype()).to(p.device()).clone();
  }
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    groups_[gi].options = defaults_;
    for (const auto& [k, v] : s.param_groups[gi].options) groups_[gi].options[k] = v;
  }
}

namespace {
// Zero-filled tensor like p (no grad).
Tensor zeros_as(const Tensor& p) { return zeros(p.shape(), p.dtype(), p.device()); }
// Runs f<T>() with T the parameter's float type.
template <typename F>
void by_dtype(const Tensor& p, F&& f) {
  if (p.dtype() == kFloat32)
    f(float{});
  else
    f(double{});
}
// The update loops and kernels read and write row-major memory. A strided parameter (a
// transposed or narrowed leaf) is updated in a row-major copy that write_back then copies
// through the parameter's strides, so the step lands in the parameter's own storage and layout;
// a strided gradient or state tensor is read through a row-major copy (a state tensor is replaced
// by it, so the next step finds it row-major).
Tensor dense_param(const Tensor& p) { return tg::detail::dense(p.detach()); }
Tensor& dense_state(Tensor& t) { return t = tg::detail::dense(t); }
void write_back(const Tensor& p, const Tensor& updated, const char* op) {
  if (!p.is_contiguous()) {
    NoGradGuard ng;
    p.detach().copy_(updated);
  }
  note_inplace_write(p, op);
}
// lo <= v < hi (PyTorch's checks), NaN rejected.
void check_range(const std::string& opt, const char* what, double v, double lo,
                 double hi = INFINITY) {
  if (!(v >= lo && v < hi)) throw Error(fmt::format("{}: invalid {}: {}", opt, what, v));
}
}  // namespace

// ---- SGD ----------------------------------------------------------------------------------------

namespace {
Options sgd_defaults(const SGDOptions& o) {
  return {{"lr", o.lr},
          {"momentum", o.momentum},
          {"dampening", o.dampening},
          {"weight_decay", o.weight_decay},
          {"nesterov", o.nesterov ? 1.0 : 0.0},
          {"maximize", o.maximize ? 1.0 : 0.0}};
}
template <typename T>
void sgd_update(T* p, const T* g, T* buf, int64_t n, const Options& o, bool first) {
  const T lr = static_cast<T>(o.at("lr")), wd = static_cast<T>(o.at("weight_decay"));
  const T mom = static_cast<T>(o.at("momentum")), damp = static_cast<T>(1 - o.at("dampening"));
  const bool nesterov = o.at("nesterov") != 0, maximize = o.at("maximize") != 0;
  for (int64_t i = 0; i < n; ++i) {
    T d = maximize ? -g[i] : g[i];
    if (wd != 0) d = d + wd * p[i];
    if (buf) {
      buf[i] = first ? d : buf[i] * mom + damp * d;
      d = nesterov ? d + mom * buf[i] : buf[i];
    }
    p[i] = p[i] - lr * d;
  }
}
}  // namespace

SGD::SGD(const std::vector<Tensor>& params, SGDOptions opts)
    : SGD(std::vector<ParamGroup>{ParamGroup(params)}, opts) {}
SGD::SGD(const std::vector<ParamGroup>& groups, SGDOptions opts)
    : Optimizer("SGD", sgd_defaults(opts)) {
  init_groups(groups);
}
void SGD::validate_values(const Options& o) const {
  check_range(name_, "learning rate", o.at("lr"), 0);
  check_range(name_, "momentum value", o.at("momentum"), 0);
  check_range(name_, "weight_decay value", o.at("weight_decay"), 0);
  if (o.at("nesterov") != 0 && (o.at("momentum") <= 0 || o.at("dampening") != 0))
    throw Error("SGD: Nesterov momentum requires a momentum and zero dampening");
}
void SGD::step() {
  for (ParamGroup& group : groups_) {
    const Options& o = group.options;
    for (Tensor& p : group.params) {
      const Tensor g = tg::detail::dense(grad_of(p));
      if (!g.defined()) continue;
      ParamState& st = state_[p.impl()];
      Tensor buf;
      bool first = false;
      if (o.at("momentum") != 0) {
        auto it = st.tensors.find("momentum_buffer");
        first = it == st.tensors.end();
        buf = first ? (st.tensors["momentum_buffer"] = zeros_as(p)) : dense_state(it->second);
      }
      if (p.device().is_cuda())
        throw Error(fmt::format("SGD: not implemented on {} yet (param {}); use Adam or AdamW",
                                p.device().str(), shape_str(p.shape())));
      if (is_reduced(p.dtype()))
        throw Error(
            fmt::format("SGD: parameter {} is {}; keep float32 master weights (a {} "
                        "gradient of a float32 parameter is fine)",
                        shape_str(p.shape()), dtype_name(p.dtype()), dtype_name(p.dtype())));
      const Tensor pd = dense_param(p);
      const Tensor g32 = g.dtype() == p.dtype() ? g : g.to(p.dtype());  // exact: reduced to f32
      by_dtype(p, [&](auto t) {
        using T = decltype(t);
        sgd_update(pd.data<T>(), g32.data<T>(), buf.defined() ? buf.data<T>() : nullptr, p.numel(),
                   o, first);
      });
      write_back(p, pd, "SGD.step");
    }
  }
}

// ---- Adam / AdamW
// ---------------------------------------------------------------------------------

namespace {
Options adam_defaults(const AdamOptions& o) {
  return {{"lr", o.lr},
          {"beta1", o.betas[0]},
          {"beta2", o.betas[1]},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"amsgrad", o.amsgrad ? 1.0 : 0.0},
          {"maximize", o.maximize ? 1.0 : 0.0}};
}
}  // namespace
namespace detail {
AdamScalars adam_scalars(const Options& o, double step, bool decoupled) {
  AdamScalars s{
      o.at("lr"), o.at("beta1"), o.at("beta2"),        o.at("eps"), o.at("weight_decay"), 0,
      0,          decoupled,     o.at("maximize") != 0};
  s.bc1 = 1 - std::pow(s.beta1, step);
  s.bc2 = 1 - std::pow(s.beta2, step);
  return s;
}
}  // namespace detail

Adam::Adam(const std::vector<Tensor>& params, AdamOptions opts)
    : Adam("Adam", std::vector<ParamGroup>{ParamGroup(params)}, opts, false) {}
Adam::Adam(const std::vector<ParamGroup>& groups, AdamOptions opts)
    : Adam("Adam", groups, opts, false) {}
Adam::Adam(const char* name, const std::vector<ParamGroup>& groups, const AdamOptions& opts,
           bool decoupled)
    : Optimizer(name, adam_defaults(opts)), decoupled_(decoupled) {
  init_groups(groups);
}
AdamW::AdamW(const std::vector<Tensor>& params, AdamWOptions opts)
    : Adam("AdamW", std::vector<ParamGroup>{ParamGroup(params)}, opts, true) {}
AdamW::AdamW(const std::vector<ParamGroup>& groups, AdamWOptions opts)
    : Adam("AdamW", groups, opts, true) {}

void Adam::validate_values(const Options& o) const {
  check_range(name_, "learning rate", o.at("lr"), 0);
  check_range(name_, "epsilon value", o.at("eps"), 0);
  check_range(name_, "beta parameter at index 0", o.at("beta1"), 0, 1);
  check_range(name_, "beta parameter at index 1", o.at("beta2"), 0, 1);
  check_range(name_, "weight_decay value", o.at("weight_decay"), 0);
}

void Adam::step() {
  for (ParamGroup& group : groups_) {
    const Options& o = group.options;
    const bool amsgrad = o.at("amsgrad") != 0;
    for (Tensor& p : group.params) {
      const Tensor g = tg::detail::dense(grad_of(p));
      if (!g.defined()) continue;
      ParamState& st = state_[p.impl()];
      if (st.tensors.empty()) {
        st.numbers["step"] = 0;
        st.tensors["exp_avg"] = zeros_as(p);
        st.tensors["exp_avg_sq"] = zeros_as(p);
        if (amsgrad) st.tensors["max_exp_avg_sq"] = zeros_as(p);
      }
      if (amsgrad && !st.tensors.count("max_exp_avg_sq"))
        st.tensors["max_exp_avg_sq"] = zeros_as(p);
      double step = st.numbers["step"] += 1;
      const detail::AdamScalars s = detail::adam_scalars(o, step, decoupled_);
      const Tensor m = dense_state(st.tensors.at("exp_avg")),
                   v = dense_state(st.tensors.at("exp_avg_sq"));
      const Tensor vmax = amsgrad ? dense_state(st.tensors.at("max_exp_avg_sq")) : Tensor();
      if (g.device() != p.device() || m.device() != p.device())
        throw Error(fmt::format("{}: parameter {} is on {} but its gradient or state is on {}",
                                name_, shape_str(p.shape()), p.device().str(),
                                g.device() != p.device() ? g.device().str() : m.device().str()));
      const Tensor pd = dense_param(p);
      tg::detail::adam_step_(name_.c_str(), pd, g, m, v, vmax, s);
      write_back(p, pd, decoupled_ ? "AdamW.step" : "Adam.step");
    }
  }
}

}  // namespace tg::nn
